import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { braidBin, runCli } from '../helpers/cli.js';
import { heavyFile } from '../helpers/heavy.js';
import { allFinal, exited, expectIntact, invocationTable, printed, type RuntimeProcess, runtimeProcess } from '../helpers/processes.js';
import { backend, definitionsDir, postgresUrl, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

// v1: a chain, and a gate and a hold after it that wait for signals; v2 gives b new args, adds d after c, drops
// the hold, and runs the gate as another kind that is never wanted (when: false skips it): a run whose gate has
// already run cannot move (a removed task that ended would move, kept as history)
const V1 = `name: flow
tasks:
  a: { kind: work }
  b: { kind: work, deps: [a], args: { v: 1 } }
  c: { kind: work, deps: [b] }
  gate: { kind: work, wait: { terms: { go: { signal: go } } } }
  hold: { kind: work, deps: [gate], wait: { terms: { fin: { signal: fin } } } }
`;
const next = (v: number) => `name: flow
tasks:
  a: { kind: work }
  b: { kind: work, deps: [a], args: { v: ${v} } }
  c: { kind: work, deps: [b] }
  d: { kind: work, deps: [c] }
  gate: { kind: limited, when: 'false' }
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(backend === 'postgres')('braid upgrade under running workers and a SIGKILL loop', () => {
  it('upgrade processes and workers killed at random: no completion lost, doubled or out of order; each ' +
    'workflow on exactly one version; one that cannot move is left untouched', async () => {
    const rt = await testRuntime();
    await rt.registerDefinitions(definitionsDir({ flow: V1 }));
    const table = await invocationTable(rt.db);
    const spawnWorker = () => runtimeProcess({ schema: rt.schema, table, concurrency: 6, sleepMinMs: 20, sleepMaxMs: 150, defaultTimings: true });
    let workers: RuntimeProcess[] = [spawnWorker(), spawnWorker()];
    await Promise.all(workers.map((p) => printed(p, 'ready')));
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) ids.push(await rt.start('flow'));
    // one workflow whose gate has run (its hold keeps it running): v2 runs the gate as another kind, so it cannot move
    const stuck = ids[0];
    await rt.workflow(stuck).signals.emit('go', {});
    await until(async () => (await rt.workflow(stuck).task('gate')).state === 'completed', 60_000);
    const before = (await rt.workflow(stuck).tasks()).map(({ name, kind, args, deps, dependents }) => ({ name, kind, args, deps, dependents }));
    const v1 = (await rt.workflow(stuck).load()).definition_hash;
    const upgrade = ['upgrade', 'flow', '--database', postgresUrl, '--schema', rt.schema, '--format', 'json'];
    let kills = 0;
    // each round deploys a new version and an upgrade to it, killed at a random moment: moves stop half-way
    for (let round = 2; round < 8; round++) {
      await rt.registerDefinitions(definitionsDir({ flow: next(round) }));
      const child = spawn(process.execPath, [braidBin, ...upgrade], { env: { ...process.env, DATABASE_URL: '' }, stdio: 'ignore' });
      await sleep(300 + Math.random() * 900);
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        kills++;
      }
      await exited(child);
      // a worker dies too, and is replaced
      const victim = workers[round % workers.length];
      victim.child.kill('SIGKILL');
      await exited(victim.child);
      workers = workers.filter((w) => w !== victim).concat(spawnWorker());
    }
    expect(kills).toBeGreaterThan(0);
    const { rows: spread } = await rt.db.query<{ n: number }>(`SELECT count(DISTINCT definition_hash)::int AS n FROM "${rt.schema}".workflows`);
    console.info(`upgrade SIGKILL loop: ${kills} of 6 upgrade runs killed, the workflows spread over ${spread[0].n} versions`);
    // a last version, and an upgrade that runs to its end: everything moves to it, but the one that cannot
    const final = (await rt.registerDefinitions(definitionsDir({ flow: next(99) }))).registered[0].hash;
    const last = runCli(upgrade, { env: { DATABASE_URL: '' }, timeoutMs: 120_000 });
    expect(last.code).toBe(1);
    const report = JSON.parse(last.stdout) as { results: { id: string; status: string; reason?: string }[] };
    // (the workers keep running: a workflow that ends before the upgrade reaches it is finished, not refused)
    expect(report.results.filter((r) => r.status !== 'moved' && r.status !== 'finished')).toEqual([
      {
        id: stuck,
        from: v1,
        to: final,
        status: 'skipped',
        reason: 'task "gate" is completed with kind work, and the version to move to runs it as kind limited',
      },
    ]);
    await rt.workflow(stuck).signals.emit('fin', {});
    await allFinal(rt.db, rt.schema, ids, 120_000);
    await expectIntact(rt.db, rt.schema, table, ids);
    // each workflow is on one version, with that version's tasks, and its history is one unbroken chain of moves
    const { rows } = await rt.db.query<{ id: string; hash: string; tasks: string[]; moves: string[] }>(
      `SELECT w.id, w.definition_hash AS hash, ARRAY(SELECT name FROM "${rt.schema}".tasks t WHERE t.workflow_id = w.id ORDER BY name) AS tasks,
              ARRAY(SELECT u.from_hash || '>' || u.to_hash FROM "${rt.schema}".workflow_upgrades u WHERE u.workflow_id = w.id ORDER BY u.id) AS moves
         FROM "${rt.schema}".workflows w WHERE w.id = ANY($1::text[])`,
      [ids],
    );
    for (const r of rows) {
      if (r.id === stuck) expect(r).toEqual({ id: stuck, hash: v1, tasks: ['a', 'b', 'c', 'gate', 'hold'], moves: [] });
      else {
        // moved once or more (a workflow with nothing left to wait for completes on the version it reached)
        expect(r.tasks).toEqual(['a', 'b', 'c', 'd', 'gate']);
        const chain = r.moves.map((m) => m.split('>'));
        expect(chain[0][0]).toBe(v1);
        expect(chain.at(-1)![1]).toBe(r.hash);
        for (const [i, m] of chain.slice(1).entries()) expect(m[0]).toBe(chain[i][1]);
      }
    }
    expect((await rt.workflow(stuck).tasks()).map(({ name, kind, args, deps, dependents }) => ({ name, kind, args, deps, dependents }))).toEqual(before);
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => exited(w.child)));
  }, 240_000);
});
