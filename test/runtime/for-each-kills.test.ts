import { describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { exited, printed, type RuntimeProcess, runtimeProcess } from '../helpers/processes.js';
import { backend, scratchTable, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

const ITEMS = 20_000;
const RETRY = 'max_attempts: 25, retry: { backoff: constant, initial: 10ms, jitter: false }';
const WIDE = `name: wide
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  item: { kind: flaky, for_each: "\${{ inputs.items }}", ${RETRY} }
`;
/** The same items with a join after them: each item a row from the start (a range holds items nothing depends on). */
const JOINED = `${WIDE}  join: { kind: flaky, deps: [item], ${RETRY} }\n`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(backend === 'postgres')('a wide for_each under SIGKILL', () => {
  for (const [shape, definition, failRate] of [
    ['rows, a join after them, failing at random', JOINED, 0.1],
    ['ranged, failing at random: their workflow given rows at the first failure', WIDE, 0.1],
    ['ranged, none failing: claimed and completed as ranges until the first rescue gives them rows', WIDE, 0],
  ] as const) {
    it(`${ITEMS.toLocaleString('en-US')} items (${shape}), workers killed every 1-3 s: each attempt runs once, none after its task completed, every earlier attempt is accounted for`, async () => {
      await underKills(definition === JOINED, definition, failRate);
    }, 360_000);
  }
});

async function underKills(joined: boolean, definition: string, failRate: number): Promise<void> {
  const rt = await testRuntime({ definitions: { wide: definition }, limits: { forEachItems: ITEMS } });
  const table = await scratchTable(
    rt.db,
    'workflow_id text, task text, attempt int, pid int, ok boolean, deps_ok boolean, at timestamptz DEFAULT clock_timestamp()',
  );
  const spawnWorker = () => runtimeProcess({ schema: rt.schema, table, concurrency: 16, prefetch: 64, failRate, workerDeadAfterMs: 1000 });
  const id = await rt.start('wide', { items: Array.from({ length: ITEMS }, (_, i) => i) });
  const { rows: ranged } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".task_ranges WHERE workflow_id = $1`, [id]);
  expect(ranged[0].n).toBe(joined ? 0 : 1);
  let procs: RuntimeProcess[] = Array.from({ length: 3 }, spawnWorker);
  await Promise.all(procs.map((p) => printed(p, 'ready')));
  const running = async () => (await rt.workflow(id).load()).state === 'running';
  let kills = 0;
  // kills while the items run (a few at most: the workflow ends in tens of seconds)
  while (kills < 8 && (await running())) {
    await sleep(1000 + Math.random() * 2000);
    const victim = procs[Math.floor(Math.random() * procs.length)];
    victim.child.kill('SIGKILL');
    kills++;
    await exited(victim.child);
    procs = procs.filter((p) => p !== victim).concat(spawnWorker());
  }
  await until(async () => !(await running()), 240_000, 250);
  expect((await rt.workflow(id).load()).state).toBe('completed');
  // every task as it reads (ranged items too)
  const s = `"${rt.schema}".task_view`;
  const { rows: open } = await rt.db.query(`SELECT name, state FROM ${s} WHERE workflow_id = $1 AND state <> 'completed'`, [id]);
  expect(open).toEqual([]);
  // no attempt ran twice
  const { rows: doubled } = await rt.db.query(`SELECT task, attempt, count(*)::int AS n FROM ${table} GROUP BY 1, 2 HAVING count(*) > 1`);
  expect(doubled).toEqual([]);
  // nothing ran after its task's completion committed, and the completed attempt is one that succeeded
  const { rows: after } = await rt.db.query(
    `SELECT i.task, i.attempt, t.attempt AS completed FROM ${table} i JOIN ${s} t ON t.workflow_id = i.workflow_id AND t.name = i.task WHERE i.attempt > t.attempt`,
  );
  expect(after).toEqual([]);
  const { rows: unrecorded } = await rt.db.query(
    `SELECT t.name, t.attempt FROM ${s} t WHERE t.workflow_id = $1
          AND NOT EXISTS (SELECT 1 FROM ${table} i WHERE i.task = t.name AND i.attempt = t.attempt AND i.ok)`,
    [id],
  );
  expect(unrecorded).toEqual([]);
  // every earlier attempt ended on the record: failed (it threw) or lost (its worker was killed)
  const { rows: unaccounted } = await rt.db.query(
    `SELECT t.name, a AS attempt FROM ${s} t CROSS JOIN LATERAL generate_series(1, t.attempt - 1) a
        WHERE t.workflow_id = $1 AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(t.errors) e WHERE (e->>'attempt')::int = a)`,
    [id],
  );
  expect(unaccounted).toEqual([]);
  if (joined) {
    // the join ran after every item's successful attempt
    const { rows: order } = await rt.db.query<{ early: boolean }>(
      `SELECT (SELECT min(at) FROM ${table} WHERE task = 'join') < (SELECT max(at) FROM ${table} WHERE task <> 'join' AND ok) AS early`,
    );
    expect(order[0].early).toBe(false);
  }
  const { rows: kinds } = await rt.db.query<{ kind: string; n: number }>(
    `SELECT e->>'kind' AS kind, count(*)::int AS n FROM ${s} t CROSS JOIN LATERAL jsonb_array_elements(t.errors) e WHERE t.workflow_id = $1 GROUP BY 1 ORDER BY 1`,
    [id],
  );
  console.info(`for_each of ${ITEMS} under ${kills} kills: attempts ended early by kind ${JSON.stringify(kinds)}`);
  // the random failures were retried, and the kills cost attempts that ran again
  if (failRate > 0) expect(kinds.find((k) => k.kind === 'error')?.n ?? 0).toBeGreaterThan(ITEMS * 0.05);
  else expect(kinds.map((k) => k.kind)).not.toContain('error');
  expect(kills).toBeGreaterThan(0);
  for (const p of procs) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => exited(p.child)));
}
