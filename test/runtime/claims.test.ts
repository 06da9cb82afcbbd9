import { describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { loadMigrations } from '../../src/runtime/setup/migrate.js';
import { completeTasks } from '../../src/runtime/sql/complete.js';
import { fetchTasks } from '../../src/runtime/sql/fetch.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { backend, DRIVEN, definitionsDir, drive, drivenRuntime, final, settled, testDatabase, testRuntime, uniqueSchema, until } from '../helpers/runtime.js';

// Running tasks are found through their workers' claims (no index lists them), so that completing a task
// changes no indexed column and is a heap-only update (migration 009).
describe(`claims and heap-only completions (${backend})`, () => {
  const definitions = {
    fan: 'name: fan\ntasks:\n  a: { kind: k }\n  b: { kind: k, deps: [a] }\n  c: { kind: k, deps: [a] }\n  d: { kind: k, deps: [b, c] }\n',
    pair: 'name: pair\ntasks:\n  a: { kind: k }\n  b: { kind: k }\n',
  };

  const claims = async (rt: Runtime) =>
    (
      await rt.db.query<{ worker_id: string; workflow_ids: string[]; names: string[] }>(
        `SELECT worker_id, workflow_ids, names FROM ${rt.internals.s}.claims ORDER BY id`,
      )
    ).rows;

  it('a fetch records its claim; the worker deletes it once every attempt in it has ended', async () => {
    const clock = new VirtualClock(new Date());
    // a takes a (virtual) minute
    const rt = await drivenRuntime({
      definitions,
      virtualClock: clock,
      handlers: { k: async (_a, ctx) => (ctx.taskName === 'a' ? clock.sleep(60_000).then(() => 'a') : ctx.taskName) },
    });
    await rt.startWorker();
    const id = await rt.start('fan');
    await settled(rt, async () => (await rt.workflow(id).task('a')).state === 'running');
    expect(await claims(rt)).toEqual([{ worker_id: rt.id, workflow_ids: [id], names: ['a'] }]);
    // a live worker's claims are left alone
    expect((await rt.maintenance()).rescued).toBe(0);
    expect(await claims(rt)).toHaveLength(1);
    expect((await final(rt, id)).state).toBe('completed');
    // b and c were claimed by a's completion, d by theirs: each claim goes once its attempts ended, with the
    // worker's next fetch or heartbeat (in real time: nothing is left for the driver to run)
    await until(async () => (await claims(rt)).length === 0);
  });

  it('completing a claimed task is a heap-only update (no index entry is written)', async () => {
    const rt = await drivenRuntime({ definitions });
    const id = await rt.start('pair');
    const { s } = rt.internals;
    const { tasks, claim } = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['k'], limit: 10, workerId: 'w1', now: new Date() });
    expect(claim).not.toBeNull();
    const hot = await rt.db.transaction(async (tx) => {
      // this transaction's updates of the table so far (the embedded database also counts earlier ones here)
      const counts = async () =>
        (
          await tx.query<{ upd: number; hot: number }>(
            `SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_xact_user_tables WHERE schemaname = $1 AND relname = 'tasks'`,
            [rt.schema],
          )
        ).rows[0];
      const before = await counts();
      const result = await completeTasks(
        tx,
        rt.advanceContext(new Date()),
        tasks.map((t) => ({ workflowId: id, name: t.name, attempt: t.attempt, workerId: 'w1', output: { big: 'x'.repeat(200) }, tid: t.tid })),
      );
      expect(result.skipped).toEqual([]);
      const after = await counts();
      return { upd: after.upd - before.upd, hot: after.hot - before.hot };
    });
    expect(hot).toEqual({ upd: 2, hot: 2 });
    expect((await rt.workflow(id).load()).state).toBe('completed');
  });

  it("a dead worker's running attempts are found through its claims and rescued; then its claims go", async () => {
    const rt = await drivenRuntime({ definitions, handlers: { k: async (_a, ctx) => ctx.attempt } });
    const id = await rt.start('pair');
    const { s } = rt.internals;
    // claimed by a worker that never registered (or whose record is gone): dead
    const first = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['k'], limit: 1, workerId: 'gone', now: new Date() });
    const second = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['k'], limit: 1, workerId: 'gone', now: new Date() });
    expect([first.tasks.length, second.tasks.length]).toEqual([1, 1]);
    // one attempt ended before the worker died; its claim still lists it
    const ended = first.tasks[0];
    await completeTasks(rt.db, rt.advanceContext(new Date()), [
      { workflowId: id, name: ended.name, attempt: ended.attempt, workerId: 'gone', output: 1, tid: ended.tid },
    ]);
    expect((await claims(rt)).map((c) => c.worker_id)).toEqual(['gone', 'gone']);
    expect((await rt.maintenance()).rescued).toBe(1);
    expect(await claims(rt)).toEqual([]);
    expect((await rt.workflow(id).task(second.tasks[0].name)).errors[0]).toMatchObject({ kind: 'lost', attempt: 1 });
    // the rescued attempt runs again on a live worker
    await rt.startWorker();
    expect((await final(rt, id)).state).toBe('completed');
    expect((await rt.workflow(id).task(second.tasks[0].name)).attempt).toBe(2);
  });

  it('a stopping worker releases what it prefetched and aborted, and leaves no claim behind', async () => {
    // one runs (until it is aborted), the other waits in the worker's prefetch: real time, as a driven run
    // settles only when nothing is in the worker's hands
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const rt = await testRuntime({
      definitions,
      queues: { default: 1 },
      prefetch: 5,
      handlers: {
        k: (_a, ctx) => {
          started();
          return new Promise((r) => ctx.signal.addEventListener('abort', r));
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('pair');
    // one claim took both: the first handler starts once it is back
    await running;
    expect((await rt.workflow(id).tasks()).map((t) => t.state)).toEqual(['running', 'running']);
    expect((await claims(rt)).flatMap((c) => c.names).sort()).toEqual(['a', 'b']);
    await rt.stop(50);
    expect(await claims(rt)).toEqual([]);
    expect((await rt.workflow(id).tasks()).map((t) => t.state)).toEqual(['available', 'available']);
  });

  it('upgrading to claims records the tasks already running, so a dead worker of the old version is rescued', async () => {
    const schema = uniqueSchema();
    const db = await testDatabase();
    const s = `"${schema}"`;
    // the schema as the previous version left it: migrations up to 008
    await db.exec(
      `CREATE SCHEMA ${s}; CREATE TABLE ${s}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());`,
    );
    // the schema before 009 and 010 (with the later ones, whose columns today's start writes and a deploy reads;
    // 022 redefines 009's lane, and 023 builds on 022, as the flow_pick 029, 030 and 032 install does; from 046 on,
    // views of tasks read every column of the table)
    for (const m of loadMigrations().filter((m) => m.id < 9 || (m.id > 10 && m.id < 22) || (m.id > 23 && m.id < 46 && ![29, 30, 32, 36].includes(m.id)))) {
      await db.exec(m.sql.replaceAll('{{schema}}', s));
      await db.query(`INSERT INTO ${s}.migrations (id, name) VALUES ($1, $2)`, [m.id, m.name]);
    }
    await db.exec(`ALTER TABLE ${s}.tasks ADD COLUMN flow jsonb`);
    // the register below writes its audit line, to the table 030 makes: one stands in, dropped before the migration
    await db.exec(
      `CREATE TABLE ${s}.audit (id bigserial, at timestamptz, actor text, role text, source text, action text, target text, ` +
        `workflow_id text, task text, reason text, detail jsonb)`,
    );
    const clock = new VirtualClock(new Date());
    const rt = drive(createRuntime({ ...DRIVEN, database: db, schema, handlers: { k: async () => 'again' }, clock: clock.now }), clock);
    await rt.registerDefinitions(definitionsDir(definitions));
    const id = await rt.start('pair');
    // claimed by an old worker, which then died
    await db.query(`UPDATE ${s}.tasks SET state = 'running', attempt = 1, worker_id = 'old', started_at = now() WHERE workflow_id = $1 AND name = 'a'`, [id]);
    await db.exec(`DROP TABLE ${s}.audit`);
    expect(await rt.migrate()).toEqual([
      '009_hot_completions',
      '010_abandoned_attempts',
      '022_flow_control',
      '023_flow_parking',
      '029_flow_pick_source',
      '030_pauses_and_audit',
      '032_dead_letters',
      '036_audit_who',
      ...loadMigrations()
        .filter((m) => m.id >= 46)
        .map((m) => m.name),
    ]);
    expect(await claims(rt)).toEqual([{ worker_id: 'old', workflow_ids: [id], names: ['a'] }]);
    expect((await rt.maintenance()).rescued).toBe(1);
    await rt.startWorker();
    expect((await final(rt, id)).state).toBe('completed');
    expect((await rt.workflow(id).task('a')).errors[0]).toMatchObject({ kind: 'lost', attempt: 1 });
    await rt.stop(1000);
  });
});
