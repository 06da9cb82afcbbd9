import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/cli.js';
import { heavyFile } from '../helpers/heavy.js';
import { allFinal, exited } from '../helpers/processes.js';
import { backend, postgresUrl, testRuntime, until } from '../helpers/runtime.js';
import { proxyFor, type TcpProxy } from '../helpers/tcp-proxy.js';

heavyFile();

const CHAIN = 'name: chain\ntasks:\n  a: { kind: work }\n  b: { kind: work, deps: [a] }\n  c: { kind: work, deps: [b] }\n';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const p of proxies) await p.close();
});

describe.runIf(backend === 'postgres')('the Python worker in a network that goes silent (sockets open, nothing carried)', () => {
  it('says the outage once and its recovery once; every workflow finishes after the network returns, nothing doubled; SIGTERM in a silent outage exits in time', async () => {
    const rt = await testRuntime({ definitions: { chain: CHAIN }, leader: true, workerDeadAfterMs: 7000, heartbeatIntervalMs: 200, pollIntervalMs: 100 });
    await rt.startWorker();
    const table = `"${rt.schema}".python_runs`;
    await rt.db.query(
      `CREATE TABLE ${table} (id bigserial PRIMARY KEY, workflow_id text, task text, attempt int, pid int, lang text, started_at timestamptz, ended_at timestamptz)`,
    );
    const proxy = proxyFor(postgresUrl);
    proxies.push(proxy);
    await proxy.start();
    let out = '';
    // its handlers record each attempt straight to the database; the worker itself goes through the proxy
    const child: ChildProcess = spawn(
      '/usr/bin/python3',
      ['-m', 'braid_worker', '--handlers', 'mixed_handlers', '--dsn', proxy.url(postgresUrl), '--schema', rt.schema, '--concurrency', '4'].concat([
        '--shutdown-grace',
        '2',
      ]),
      { cwd: repoRoot, env: { ...process.env, PYTHONPATH: 'clients/python:test/fixtures/mixed', BRAID_DIRECT_URL: postgresUrl, BRAID_TABLE: table } },
    );
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    let phase = 'starting';
    // a test that runs out of time says where it was and what the worker printed
    const report = setTimeout(() => console.error(`python-outage: still ${phase} after 200 s; the worker printed:\n${out}`), 200_000);
    try {
      await until(() => /braid worker \S+ ready/.test(out), 30_000, 50);
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) ids.push(await rt.start('chain'));
      await until(async () => (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n >= 20, 60_000);
      phase = 'in the outage';
      proxy.blackhole();
      await sleep(12_000);
      proxy.restore();
      phase = 'waiting for every workflow after the outage';
      await allFinal(rt.db, rt.schema, ids, 60_000);
      const { rows: states } = await rt.db.query<{ state: string; n: number }>(
        `SELECT state, count(*)::int AS n FROM "${rt.schema}".workflows WHERE id = ANY($1) GROUP BY state`,
        [ids],
      );
      expect(states).toEqual([{ state: 'completed', n: 30 }]);
      const { rows: doubled } = await rt.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} GROUP BY workflow_id, task, attempt HAVING count(*) > 1) x`,
      );
      expect(doubled[0].n).toBe(0);
      phase = 'waiting for the recovery line';
      await until(() => /heartbeats reach the database again/.test(out), 30_000, 100);
      const lines = out.split('\n');
      expect(lines.filter((l) => l.includes('heartbeat failed'))).toHaveLength(1);
      expect(lines.filter((l) => l.includes('heartbeats reach the database again'))).toHaveLength(1);
      expect(out).not.toMatch(/Traceback/);
      expect(child.exitCode).toBeNull();
      // SIGTERM while the network is silent: it exits within its grace (2 s), its stop's bound (2 s more), and the
      // interpreter's own exit (a margin for a busy machine)
      phase = 'stopping in a second outage';
      proxy.blackhole();
      await sleep(1000);
      const stopped = Date.now();
      child.kill('SIGTERM');
      await exited(child);
      const stopMs = Date.now() - stopped;
      console.info(`SIGTERM during a silent outage: the Python worker exited in ${stopMs} ms (grace 2 s)`);
      expect(stopMs).toBeLessThan(2000 + 2000 + 2000);
      expect(child.exitCode).toBe(0);
    } finally {
      clearTimeout(report);
      proxy.restore();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited(child);
    }
  }, 240_000);
});
