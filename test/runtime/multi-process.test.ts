import { describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { patient } from '../helpers/patience.js';
import { exited, invocationTable, printed, runtimeProcess } from '../helpers/processes.js';
import { backend, newDatabase, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

const SHAPES = {
  chain: 'name: chain\ntasks:\n  a: { kind: work }\n  b: { kind: work, deps: [a] }\n  c: { kind: work, deps: [b] }\n',
  diamond: 'name: diamond\ntasks:\n  a: { kind: work }\n  b: { kind: work, deps: [a] }\n  c: { kind: work, deps: [a] }\n  d: { kind: work, deps: [b, c] }\n',
  fan:
    'name: fan\ninputs: { type: object, properties: { n: { type: array } }, required: [n] }\ntasks:\n  root: { kind: work ' +
    '}\n  leaf: { kind: work, deps: [root], for_each: "${{ inputs.n }}" }\n  join: { kind: work, deps: [leaf] }\n',
  single: 'name: single\ntasks:\n  only: { kind: work }\n',
};

describe.runIf(backend === 'postgres')('several runtime processes against one Postgres', () => {
  it('4 processes, 500 workflows of mixed shapes: every handler runs exactly once, every workflow finalizes', async () => {
    const rt = await testRuntime({ definitions: SHAPES });
    const db = rt.db;
    const table = await invocationTable(db);
    const procs = Array.from({ length: 4 }, () => runtimeProcess({ schema: rt.schema, table, concurrency: 8 }));
    const ids: string[] = [];
    const names = ['chain', 'diamond', 'fan', 'single'];
    for (let i = 0; i < 500; i++) ids.push(await rt.start(names[i % 4], i % 4 === 2 ? { n: [1, 2, 3, 4, 5] } : {}));
    await until(
      async () => {
        const { rows } = await db.query<{ open: number }>(`SELECT count(*)::int AS open FROM "${rt.schema}".workflows WHERE state = 'running'`);
        return rows[0].open === 0;
      },
      240_000,
      250,
    );
    const { rows: states } = await db.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM "${rt.schema}".workflows GROUP BY state`);
    expect(states).toEqual([{ state: 'completed', n: 500 }]);
    const { rows: total } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".tasks`);
    const { rows: counts } = await db.query<{ runs: number; n: number }>(
      `SELECT runs, count(*)::int AS n FROM (SELECT workflow_id, task, count(*)::int AS runs FROM ${table} GROUP BY 1, 2) x GROUP BY runs`,
    );
    expect(counts).toEqual([{ runs: 1, n: total[0].n }]);
    const { rows: running } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".tasks WHERE state <> 'completed'`);
    expect(running[0].n).toBe(0);
    const { rows: pids } = await db.query<{ n: number }>(`SELECT count(DISTINCT pid)::int AS n FROM ${table}`);
    expect(pids[0].n).toBe(4);
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p.child)));
  }, 300_000);

  it('3 processes: 40 parents each start 3 children and wait on all of them; every wait resolves once', async () => {
    const defs = {
      single: SHAPES.single,
      parent: `name: parent
tasks:
  kids:
    start: { workflow: single, group: kids, for_each: "\${{ [1, 2, 3] }}", inputs: {} }
  after:
    kind: work
    deps: [kids]
    wait: { terms: { all: { workflows: { group: kids, mode: all } } } }
`,
    };
    const rt = await testRuntime({ definitions: defs });
    const table = await invocationTable(rt.db);
    const procs = Array.from({ length: 3 }, () => runtimeProcess({ schema: rt.schema, table, concurrency: 8 }));
    await Promise.all(procs.map((p) => printed(p, 'ready')));
    const parents = await Promise.all(Array.from({ length: 40 }, () => rt.start('parent')));
    for (const id of parents) expect((await rt.workflow(id).waitUntilFinal({ timeoutMs: patient(120_000), pollMs: 100 })).state).toBe('completed');
    const { rows: children } = await rt.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${rt.schema}".workflows WHERE parent_id = ANY($1::text[]) AND state = 'completed'`,
      [parents],
    );
    expect(children[0].n).toBe(120);
    const { rows: runs } = await rt.db.query<{ task: string; n: number }>(`SELECT task, count(*)::int AS n FROM ${table} GROUP BY task ORDER BY task`);
    expect(runs).toEqual([
      { task: 'after', n: 40 },
      { task: 'only', n: 120 },
    ]);
    const { rows: left } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".effects`);
    expect(left[0].n).toBe(0);
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p.child)));
  }, 300_000);

  it('a fan-in of 50 deps completed concurrently from several connections always releases its dependent', async () => {
    const defs = {
      fanin:
        `name: fanin\ntasks:\n${Array.from({ length: 50 }, (_, i) => `  d${i}: { kind: work }\n`).join('')}  join: ` +
        `{ kind: work, deps: [${Array.from({ length: 50 }, (_, i) => `d${i}`).join(', ')}] }\n`,
    };
    const first = await testRuntime({ definitions: defs });
    const pools = Array.from({ length: 5 }, () => newDatabase());
    const runners = await Promise.all(
      pools.map((database) => testRuntime({ database, schema: first.schema, queues: { default: 10 }, handlers: { work: async () => ({}) } })),
    );
    for (let round = 0; round < 5; round++) {
      const id = await first.start('fanin');
      if (round === 0) await Promise.all(runners.map((r) => r.startWorker()));
      const w = await first.workflow(id).waitUntilFinal({ timeoutMs: patient(60_000), pollMs: 50 });
      expect(w.state).toBe('completed');
      expect((await first.workflow(id).task('join')).state).toBe('completed');
    }
    for (const r of runners) await r.stop(1000);
    for (const p of pools) await p.close();
  }, 120_000);

  it('a runtime killed with SIGKILL while handlers run: another process rescues and finishes everything', async () => {
    const rt = await testRuntime({ definitions: SHAPES });
    const table = await invocationTable(rt.db);
    const victim = runtimeProcess({ schema: rt.schema, table, sleepMs: 3000, workerDeadAfterMs: 1000, log: true });
    await printed(victim, 'ready');
    const ids = await Promise.all(Array.from({ length: 10 }, () => rt.start('single')));
    await until(async () => {
      const { rows } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      return rows[0].n === 10;
    }, 60_000);
    // the handlers' log lines are stored a second after they are written: those survive the kill
    const logged = async () => (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".task_logs WHERE source = 'handler'`)).rows[0].n;
    await until(async () => (await logged()) === 10, 60_000);
    victim.child.kill('SIGKILL');
    await exited(victim.child);
    const rescuer = runtimeProcess({ schema: rt.schema, table, sleepMs: 10, workerDeadAfterMs: 1000, log: true });
    for (const id of ids) expect((await rt.workflow(id).waitUntilFinal({ timeoutMs: patient(60_000), pollMs: 100 })).state).toBe('completed');
    const { rows } = await rt.db.query<{ attempt: number; n: number }>(`SELECT attempt, count(*)::int AS n FROM ${table} GROUP BY attempt ORDER BY attempt`);
    expect(rows).toEqual([
      { attempt: 1, n: 10 },
      { attempt: 2, n: 10 },
    ]);
    const task = await rt.workflow(ids[0]).task('only');
    expect(task.errors[0]).toMatchObject({ attempt: 1, kind: 'lost' });
    const lines = (await rt.workflow(ids[0]).logs({ task: 'only' })).lines.map((l) => [l.attempt, l.source, l.message]);
    expect(lines).toEqual([
      [1, 'braid', expect.stringMatching(/^attempt 1 started on worker /)],
      [1, 'handler', 'working'],
      [1, 'braid', expect.stringMatching(/^attempt 1 lost \(worker \S+ stopped heartbeating while running this attempt\): runs again at once$/)],
      [2, 'braid', expect.stringMatching(/^attempt 2 started on worker /)],
      [2, 'handler', 'working'],
    ]);
    expect(rescuer.output()).toMatch(/rescued \d+ attempt/);
    rescuer.child.kill('SIGTERM');
    await exited(rescuer.child);
  }, 120_000);

  it('leader failover: kill the leader; another process becomes leader and promotes scheduled tasks', async () => {
    const rt = await testRuntime({ definitions: { later: 'name: later\ntasks:\n  t: { kind: work, delay: 3s }\n' } });
    const table = await invocationTable(rt.db);
    const a = runtimeProcess({ schema: rt.schema, table, leaderLeaseMs: 1000 });
    await printed(a, 'leading');
    const b = runtimeProcess({ schema: rt.schema, table, leaderLeaseMs: 1000 });
    await printed(b, 'ready');
    expect(b.output()).not.toContain('leading');
    const id = await rt.start('later');
    a.child.kill('SIGKILL');
    await exited(a.child);
    await printed(b, 'leading', 30_000);
    const w = await rt.workflow(id).waitUntilFinal({ timeoutMs: patient(30_000), pollMs: 100 });
    expect(w.state).toBe('completed');
    const { rows } = await rt.db.query<{ pid: number }>(`SELECT pid FROM ${table}`);
    expect(rows).toEqual([{ pid: b.child.pid }]);
    b.child.kill('SIGTERM');
    await exited(b.child);
  }, 120_000);
});
