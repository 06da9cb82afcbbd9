import { describe, expect, it } from 'vitest';
import { PLANNER_SETTINGS } from '../../src/runtime/db/planner.js';
import type { Queryable } from '../../src/runtime/db/types.js';
import { completionSql, leanCompletionSql } from '../../src/runtime/sql/complete.js';
import { fetchSql } from '../../src/runtime/sql/fetch.js';
import { nodes, type PlanNode } from '../helpers/plans.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const BATCH = 500;
const FAN = `name: fan
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  root: { kind: noop }
  leaf: { kind: noop, deps: [root], for_each: "\${{ inputs.items }}" }
`;
const ONE = 'name: one\ntasks:\n  t: { kind: other }\n';
/** Items nothing depends on: written as ranges, claimed as running ranges. */
const MAP =
  'name: map\ninputs: { type: object, properties: { items: { type: array } }, required: [items] }\ntasks:\n  leaf: { kind: leaf, for_each: "${{ inputs.items }}" }\n';

/** What a plan node read past what it kept: rows its filters removed, over all its loops. */
function removed(n: PlanNode): number {
  return ((n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Join Filter'] ?? 0)) * (n['Actual Loops'] ?? 1);
}

async function explained(tx: Queryable, execute: string): Promise<PlanNode> {
  await tx.query('SAVEPOINT plan');
  const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${execute}`);
  await tx.query('ROLLBACK TO SAVEPOINT plan');
  return rows[0]['QUERY PLAN'][0].Plan;
}

/**
 * A connection plans braid's statements once (generic plans, kept for its life): on a young deployment that is
 * while the tables hold a handful of rows, and the plans stay when they hold thousands (until an ANALYZE says
 * otherwise). Planned on a tiny table, the completion of a fan-out scanned every task once per dependent (2,000
 * dependents on 22,000 tasks: 0.9 s instead of 0.05). Each statement here is planned on a deployment of one
 * workflow, then run on one of thousands of tasks, under the settings the protocol's functions and braid's hot
 * connections give their statements.
 */
describe(`statements planned while the tables were tiny stay keyed (${backend})`, () => {
  it('claim, completion of a fan-out, of one-task workflows, lean and whole: no table read whole, no filter past the batch', async () => {
    const rt = await drivenRuntime({ definitions: { fan: FAN, one: ONE, map: MAP } });
    const s = `"${rt.schema}"`;
    await rt.start('one', {});
    await rt.db.transaction(async (tx) => {
      for (const [name, value] of Object.entries(PLANNER_SETTINGS)) await tx.query(`SET LOCAL ${name} = ${value}`);
      await tx.query(`PREPARE young_claim(text, text[], int, text, timestamptz, bigint[], int, text[], jsonb) AS ${fetchSql(s)}`);
      await tx.query(`PREPARE young_claim_ranges(text, text[], int, text, timestamptz, bigint[], int, text[], jsonb) AS ${fetchSql(s, true)}`);
      for (const byTid of [true, false]) {
        await tx.query(`PREPARE young_lean_${byTid}(jsonb, timestamptz, text[], text) AS ${leanCompletionSql(s, byTid)}`);
        await tx.query(`PREPARE young_whole_${byTid}(jsonb, timestamptz, text[], text, jsonb, text[], text) AS ${completionSql(s, byTid)}`);
      }
      // the generic plans are made at the first execution: on a deployment of one workflow
      await tx.query(`EXECUTE young_claim('default', ARRAY['none'], 1, 'w0', now(), ARRAY[]::bigint[], 1, NULL, NULL)`);
      await tx.query(`EXECUTE young_claim_ranges('default', ARRAY['none'], 1, 'w0', now(), ARRAY[]::bigint[], 1, NULL, NULL)`);
      for (const byTid of [true, false]) {
        await tx.query(`EXECUTE young_lean_${byTid}('[]', now(), ARRAY[]::text[], NULL)`);
        await tx.query(`EXECUTE young_whole_${byTid}('[]', now(), ARRAY[]::text[], NULL, '[]', ARRAY[]::text[], 'w0')`);
      }
      // then it grows: a fan-out of 2 x BATCH, BATCH one-task workflows, and 20 x BATCH other tasks
      const fan = await rt.start('fan', { items: Array.from({ length: 2 * BATCH }, (_, n) => n) }, { tx });
      // (before the one-task workflows: its items come first in the queue's order, so the claim below takes them)
      await rt.start('map', { items: Array.from({ length: 4 * BATCH }, (_, n) => n) }, { tx });
      for (let n = 0; n < 3; n++)
        await rt.startMany(
          'one',
          Array.from({ length: 7 * BATCH }, () => ({})),
          { tx },
        );
      const { rows: root } = await tx.query<{ tid: string }>(
        `UPDATE ${s}.tasks SET state = 'running', attempt = 1, worker_id = 'w1' WHERE workflow_id = $1 AND name = 'root' RETURNING ctid::text AS tid`,
        [fan],
      );
      const { rows: ones } = await tx.query<{ workflow_id: string; tid: string }>(
        `UPDATE ${s}.tasks SET state = 'running', attempt = 1, worker_id = 'w1'
          WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${s}.tasks WHERE kind = 'other' AND state = 'available' LIMIT ${BATCH}))
          RETURNING workflow_id, ctid::text AS tid`,
      );
      const attempts = (groups: [string, string, string][], byTid: boolean) =>
        `'${JSON.stringify(groups.map(([w, name, tid]) => ({ workflow_id: w, worker_id: 'w1', attempts: [[name, 1, byTid ? tid : null, { n: 1 }]] })))}'`;
      const ids = (groups: [string, string, string][]) => `ARRAY[${groups.map(([w]) => `'${w}'`).join(',')}]::text[]`;
      const fanBatch: [string, string, string][] = [[fan, 'root', root[0].tid]];
      const oneBatch: [string, string, string][] = ones.map((o) => [o.workflow_id, 't', o.tid]);
      const plans: Record<string, PlanNode> = {
        claim: await explained(tx, `young_claim('default', ARRAY['other'], ${BATCH}, 'w2', now(), ARRAY[]::bigint[], ${BATCH}, NULL, NULL)`),
        'claim, as running ranges': await explained(
          tx,
          `young_claim_ranges('default', ARRAY['other', 'leaf'], ${BATCH}, 'w3', now(), ARRAY[]::bigint[], ${BATCH}, NULL, NULL)`,
        ),
      };
      // (that claim took ranged items: it wrote running ranges)
      const split = nodes(plans['claim, as running ranges']).find(
        (n) => n['Node Type'] === 'ModifyTable' && n.Operation === 'Insert' && n['Relation Name'] === 'task_ranges',
      );
      expect(split?.['Actual Rows']).toBeGreaterThan(0);
      for (const byTid of [true, false]) {
        plans[`whole, a fan-out of ${2 * BATCH}, by tid ${byTid}`] = await explained(
          tx,
          `young_whole_${byTid}(${attempts(fanBatch, byTid)}, now(), ${ids(fanBatch)}, NULL, '[{"queue":"default","n":${BATCH}}]', ARRAY['noop'], 'w1')`,
        );
        plans[`whole, ${BATCH} one-task workflows, by tid ${byTid}`] = await explained(
          tx,
          `young_whole_${byTid}(${attempts(oneBatch, byTid)}, now(), ${ids(oneBatch)}, NULL, '[]', ARRAY[]::text[], 'w1')`,
        );
        plans[`lean, ${BATCH} one-task workflows, by tid ${byTid}`] = await explained(
          tx,
          `young_lean_${byTid}(${attempts(oneBatch, byTid)}, now(), ${ids(oneBatch)}, NULL)`,
        );
      }
      // every statement's reading at once: what a regression reads whole, and how much its filters threw away
      const read = Object.fromEntries(
        Object.entries(plans).map(([statement, plan]) => [
          statement,
          {
            // (a branch never executed, as a pause's look when nothing is paused, reads nothing)
            whole: nodes(plan)
              .filter(
                (n) =>
                  n['Node Type'] === 'Seq Scan' && ['tasks', 'workflows', 'task_ranges'].includes(n['Relation Name'] ?? '') && (n['Actual Loops'] ?? 0) > 0,
              )
              .map((n) => n['Relation Name']),
            withinBatch: Math.max(0, ...nodes(plan).map(removed)) <= 2 * BATCH,
          },
        ]),
      );
      expect(read).toEqual(Object.fromEntries(Object.keys(plans).map((statement) => [statement, { whole: [], withinBatch: true }])));
    });
  }, 120_000);
});
