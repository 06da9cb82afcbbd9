import { describe, expect, it } from 'vitest';
import type { PlanFlow } from '../../src/compiler/flow.js';
import { flowReason } from '../../src/runtime/flow/reason.js';
import { flowHoldings } from '../../src/runtime/sql/flow.js';
import { backend, testRuntime } from '../helpers/runtime.js';

/**
 * The claim's rule (flow_pick, src/runtime/sql/flow-pick.sql) and its twin in words (flow/reason.ts, what status
 * says) over one table: for each case a waiting task and what its keys hold, the claim picks it exactly when the
 * twin finds no reason it waits. Each case has its own queue and keys, so all of them sit in one schema.
 */
interface Case {
  flow: PlanFlow;
  /** attempts of other runs in flight on the concurrency key */
  running?: number;
  /** other runs holding the workflow-concurrency key, and whether the task's own run holds it too */
  runs?: number;
  holds?: boolean;
  /** the rate key's starts, in ms before now */
  starts?: number[];
}

const now = new Date('2027-03-01T12:00:00.000Z');
const PER = 60_000;

function cases(): Case[] {
  const list: Case[] = [];
  for (const limit of [1, 2, 3]) for (const running of [0, 1, 2, 3]) list.push({ flow: { concurrency: { key: 'c', limit } }, running });
  for (const limit of [1, 2])
    for (const runs of [0, 1, 2]) for (const holds of [false, true]) list.push({ flow: { workflow_concurrency: { key: 'w', limit } }, runs, holds });
  const windows = [[], [1000], [1000, 30_000], [PER - 1, PER], [PER, PER + 1, 2 * PER], [1, 2, 3]];
  for (const limit of [1, 2, 3]) for (const starts of windows) list.push({ flow: { rate_limit: { key: 'r', limit, per_ms: PER } }, starts });
  // the rules together: each holds the task back alone, and none of them when all have room
  for (const running of [0, 1])
    for (const runs of [0, 1])
      for (const starts of [[], [5000]])
        list.push({
          flow: { concurrency: { key: 'c', limit: 1 }, workflow_concurrency: { key: 'w', limit: 1 }, rate_limit: { key: 'r', limit: 1, per_ms: PER } },
          running,
          runs,
          starts,
        });
  list.push({ flow: { concurrency: { key: 'c', limit: 2 }, fairness: { key: 'f', weight: 3 } }, running: 2 });
  return list;
}

/** The case's flow with its keys made its own. */
function own(flow: PlanFlow, i: number): PlanFlow {
  const keyed = <T extends { key: string }>(x: T | undefined) => (x ? { ...x, key: `${x.key}${i}` } : undefined);
  return JSON.parse(
    JSON.stringify({
      concurrency: keyed(flow.concurrency),
      workflow_concurrency: keyed(flow.workflow_concurrency),
      rate_limit: keyed(flow.rate_limit),
      fairness: keyed(flow.fairness),
    }),
  );
}

interface Row {
  workflow: string;
  name: string;
  queue: string;
  state: 'available' | 'running';
  flow: PlanFlow;
}

/** The tasks a case needs: the waiting one, and the running ones that hold its keys. */
function rowsOf(c: Case, i: number): Row[] {
  const flow = own(c.flow, i);
  const running = (workflow: string, held: PlanFlow): Row => ({ workflow, name: `held${i}`, queue: 'elsewhere', state: 'running', flow: held });
  return [
    { workflow: `cand${i}`, name: 'waits', queue: `q${i}`, state: 'available', flow },
    ...Array.from({ length: c.running ?? 0 }, (_, j) => running(`c${i}-${j}`, { concurrency: flow.concurrency })),
    ...Array.from({ length: c.runs ?? 0 }, (_, j) => running(`w${i}-${j}`, { workflow_concurrency: flow.workflow_concurrency })),
    ...(c.holds ? [running(`cand${i}`, { workflow_concurrency: flow.workflow_concurrency })] : []),
  ];
}

describe(`flow control: the claim (flow_pick) and status (flow/reason.ts) agree (${backend})`, () => {
  it('a waiting task is picked exactly when no rule holds it back, for every case of the table', async () => {
    const rt = await testRuntime();
    const s = rt.schema;
    const table = cases();
    const rows = table.flatMap(rowsOf);
    await rt.db.query(
      `WITH r AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(workflow text, name text, queue text, state text, flow jsonb)),
            w AS (INSERT INTO ${s}.workflows (id, name, definition_hash, inputs, tasks_total, tasks_open, created_at, attempt_started_at)
                  SELECT DISTINCT workflow, 'twin', 'h', '{}'::jsonb, 2, 2, $2::timestamptz, $2::timestamptz FROM r)
       INSERT INTO ${s}.tasks (workflow_id, name, template, kind, queue, priority, state, max_attempts, args, deps, dependents, deps_left,
                               scheduled_at, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps, metadata, created_at,
                               flow, worker_id, attempt, started_at)
       SELECT workflow, name, name, 'work', queue, 0, state, 3, '{}', '{}', '{}', 0, $2, false, false, false, '{}', $2,
              flow, CASE WHEN state = 'running' THEN 'worker' END, CASE WHEN state = 'running' THEN 1 ELSE 0 END,
              CASE WHEN state = 'running' THEN $2::timestamptz END
         FROM r`,
      [JSON.stringify(rows), now],
    );
    const rates = table.flatMap((c, i) => (c.starts?.length ? [{ key: `r${i}`, starts: c.starts.map((ms) => new Date(now.getTime() - ms)) }] : []));
    await rt.db.query(
      `INSERT INTO ${s}.flow_rates (key, starts, expires_at)
       SELECT key, ARRAY(SELECT jsonb_array_elements_text(starts)::timestamptz), $2::timestamptz + interval '1 day'
         FROM jsonb_to_recordset($1::jsonb) AS r(key text, starts jsonb)`,
      [JSON.stringify(rates), now],
    );

    const picked = await rt.db.query<{ picked: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${s}.flow_pick(q, NULL, 1, $2, true) p WHERE p.wid IS NOT NULL) AS picked
         FROM unnest($1::text[]) WITH ORDINALITY AS x(q, i) ORDER BY x.i`,
      [table.map((_, i) => `q${i}`), now],
    );
    const flows = table.map((c, i) => own(c.flow, i));
    const held = await flowHoldings(rt.db, s, flows);
    const reasons = flows.map((flow, i) => flowReason(flow, `cand${i}`, held, now));

    const disagree = table
      .map((c, i) => ({ case: c, claim: picked.rows[i].picked ? 'picks it' : 'leaves it', status: reasons[i] ?? 'no reason' }))
      .filter((_, i) => picked.rows[i].picked !== (reasons[i] === null));
    expect(disagree).toEqual([]);
    // the table reaches both answers of each rule
    const outcomes = new Set(reasons.map((r) => (r === null ? 'free' : r.split(' ')[0])));
    expect(outcomes).toEqual(new Set(['free', 'concurrency', 'workflow', 'rate']));
  });
});
