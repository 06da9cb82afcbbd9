import { afterAll, describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { allFinal, exited, expectIntact, faultsWorker, invocationTable, printed } from '../helpers/processes.js';
import { backend, postgresUrl, testRuntime, until } from '../helpers/runtime.js';
import { proxyFor, type TcpProxy } from '../helpers/tcp-proxy.js';

heavyFile();

const CHAIN = 'name: chain\ntasks:\n  a: { kind: work }\n  b: { kind: work, deps: [a] }\n  c: { kind: work, deps: [b] }\n';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const p of proxies) await p.close();
});

/** A CLI worker through the proxy. */
const cliWorker = (url: string, schema: string, table: string) => faultsWorker(url, schema, table, ['--shutdown-timeout', '2']);

describe.runIf(backend === 'postgres')('a network that goes silent (sockets open, nothing carried), through the real CLI', () => {
  it('3 workers: each says the outage once and its recovery once; every workflow finishes after the network ' +
    'returns, nothing lost or doubled; SIGTERM in a silent outage exits in time', async () => {
    const rt = await testRuntime({ definitions: { chain: CHAIN } });
    const table = await invocationTable(rt.db);
    const proxy = proxyFor(postgresUrl);
    proxies.push(proxy);
    await proxy.start();
    const procs = Array.from({ length: 3 }, () => cliWorker(proxy.url(postgresUrl), rt.schema, table));
    await Promise.all(procs.map((p) => printed(p, / running \d+ kind\(s\)/)));
    const ids: string[] = [];
    for (let i = 0; i < 80; i++) ids.push(await rt.start('chain'));
    await until(async () => (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n >= 40, 60_000);
    proxy.blackhole();
    await sleep(20_000);
    proxy.restore();
    const back = Date.now();
    await allFinal(rt.db, rt.schema, ids, 60_000);
    const finishedIn = Date.now() - back;
    console.info(`silent outage of 20 s: every workflow final ${finishedIn} ms after the network came back`);
    // dead-after (7 s) and a rescue pass after it
    expect(finishedIn).toBeLessThan(7000 + 10_000);
    await expectIntact(rt.db, rt.schema, table, ids);
    for (const p of procs) {
      expect(p.child.exitCode).toBeNull();
      // a worker the others left no work to may notice the database back only at its next heartbeat
      await printed(p, /the database answers again after/, 30_000);
      const lines = p.output().split('\n');
      expect(lines.filter((l) => l.includes('no heartbeat has committed for'))).toHaveLength(1);
      expect(lines.filter((l) => l.includes('the database answers again after'))).toHaveLength(1);
      expect(p.output()).not.toMatch(/Error:|at .*\.[jt]s:\d+/);
    }
    // SIGTERM while the network is silent: each exits within its shutdown timeout (2 s) and 2 s more
    proxy.blackhole();
    await sleep(1000);
    const stopped = Date.now();
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p.child)));
    const stopMs = Date.now() - stopped;
    console.info(`SIGTERM during a silent outage: all 3 workers exited in ${stopMs} ms (shutdown timeout 2 s)`);
    expect(stopMs).toBeLessThan(2000 + 2000);
    proxy.restore();
  }, 180_000);
});
