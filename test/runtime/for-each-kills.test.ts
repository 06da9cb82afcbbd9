import { describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { exited, printed, type RuntimeProcess, runtimeProcess } from '../helpers/processes.js';
import { backend, scratchTable, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

const ITEMS = 20_000;
const DEFINITION = `name: wide
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  item: { kind: flaky, for_each: "\${{ inputs.items }}", max_attempts: 25, retry: { backoff: constant, initial: 10ms, jitter: false } }
  join: { kind: flaky, deps: [item], max_attempts: 25, retry: { backoff: constant, initial: 10ms, jitter: false } }
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(backend === 'postgres')('a wide for_each under SIGKILL', () => {
  it(`${ITEMS.toLocaleString('en-US')} items failing at random, workers killed every 1-3 s: each attempt runs once, none after its task completed, every earlier attempt is accounted for`, async () => {
    const rt = await testRuntime({ definitions: { wide: DEFINITION }, limits: { forEachItems: ITEMS } });
    const table = await scratchTable(
      rt.db,
      'workflow_id text, task text, attempt int, pid int, ok boolean, deps_ok boolean, at timestamptz DEFAULT clock_timestamp()',
    );
    const spawnWorker = () => runtimeProcess({ schema: rt.schema, table, concurrency: 16, prefetch: 64, failRate: 0.1, workerDeadAfterMs: 1000 });
    let procs: RuntimeProcess[] = Array.from({ length: 3 }, spawnWorker);
    await Promise.all(procs.map((p) => printed(p, 'ready')));
    const id = await rt.start('wide', { items: Array.from({ length: ITEMS }, (_, i) => i) });
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
    const s = `"${rt.schema}".tasks`;
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
    // the join ran after every item's successful attempt
    const { rows: order } = await rt.db.query<{ early: boolean }>(
      `SELECT (SELECT min(at) FROM ${table} WHERE task = 'join') < (SELECT max(at) FROM ${table} WHERE task <> 'join' AND ok) AS early`,
    );
    expect(order[0].early).toBe(false);
    const { rows: kinds } = await rt.db.query<{ kind: string; n: number }>(
      `SELECT e->>'kind' AS kind, count(*)::int AS n FROM ${s} t CROSS JOIN LATERAL jsonb_array_elements(t.errors) e WHERE t.workflow_id = $1 GROUP BY 1 ORDER BY 1`,
      [id],
    );
    console.info(`for_each of ${ITEMS} under ${kills} kills: attempts ended early by kind ${JSON.stringify(kinds)}`);
    // the random failures were retried, and the kills cost attempts that ran again
    expect(kinds.find((k) => k.kind === 'error')?.n ?? 0).toBeGreaterThan(ITEMS * 0.05);
    expect(kills).toBeGreaterThan(0);
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p.child)));
  }, 360_000);
});
