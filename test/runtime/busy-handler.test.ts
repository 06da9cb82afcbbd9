import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { patient } from '../helpers/patience.js';
import { allFinal, faultsWorker, invocationTable, printed } from '../helpers/processes.js';
import { backend, postgresUrl, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

/** A task whose handler blocks its worker on the attempts `on`, for `ms` or until the file `until` exists. */
const definition = (ms: number, on: number[], until?: string) =>
  `name: busy\ntasks:\n  crunch: { kind: block, args: { ms: ${ms}, on: [${on.join(', ')}]${until ? `, until: ${JSON.stringify(until)}` : ''} }, max_attempts: 3 }\n`;

/** A CLI worker with a short dead-after. */
const cliWorker = (schema: string, table: string, extra: string[]) =>
  faultsWorker(postgresUrl, schema, table, ['--heartbeat', '500ms', '--dead-after', '2s', '--shutdown-timeout', '1', ...extra]);

async function invocations(rt: Awaited<ReturnType<typeof testRuntime>>, table: string): Promise<{ attempt: number; pid: number }[]> {
  return (await rt.db.query<{ attempt: number; pid: number }>(`SELECT attempt, pid FROM ${table} ORDER BY attempt`)).rows;
}

describe.runIf(backend === 'postgres')('a handler that blocks its worker’s event loop, through the real CLI with 2 workers', () => {
  it('longer than dead-after: the liveness thread keeps the worker alive, the task runs once, and the stall is reported', async () => {
    const rt = await testRuntime({ definitions: { busy: definition(5000, [1]) } });
    const table = await invocationTable(rt.db);
    const procs = [cliWorker(rt.schema, table, []), cliWorker(rt.schema, table, [])];
    await Promise.all(procs.map((p) => printed(p, / running \d+ kind\(s\)/)));
    const id = await rt.start('busy');
    await allFinal(rt.db, rt.schema, [id], 60_000);
    expect(await rt.workflow(id).waitUntilFinal({ timeoutMs: patient(20_000), pollMs: 20 })).toMatchObject({ state: 'completed' });
    const runs = await invocations(rt, table);
    expect(runs.map((r) => r.attempt)).toEqual([1]);
    const busy = procs.find((p) => p.child.pid === runs[0].pid)!;
    expect(busy.output()).toMatch(/the event loop was blocked for [5-9]\.\d s \(running: block of [0-9A-Z]+\).*the liveness thread kept this worker alive/);
    for (const p of procs) expect(p.output()).not.toMatch(/no heartbeat has committed|Error:|at .*\.[jt]s:\d+/);
  }, 120_000);

  it(
    'past the stall limit: the worker is taken for hung, says so, and the task runs again elsewhere; the first result is dropped',
    async () => {
      // the first attempt blocks until the second has run elsewhere (whichever worker leads, however slow the
      // machine), then returns a result that must be dropped
      const release = join(mkdtempSync(join(tmpdir(), 'braid-busy-')), 'release');
      const rt = await testRuntime({ definitions: { busy: definition(120_000, [1], release) } });
      const table = await invocationTable(rt.db);
      const procs = [cliWorker(rt.schema, table, ['--stall-limit', '2s']), cliWorker(rt.schema, table, ['--stall-limit', '2s'])];
      await Promise.all(procs.map((p) => printed(p, / running \d+ kind\(s\)/)));
      const id = await rt.start('busy');
      // when the second attempt does not come, the workers' own words say why
      await until(async () => (await invocations(rt, table)).length === 2, 60_000).catch(async (error: Error) => {
        const task = await rt.workflow(id).task('crunch');
        throw new Error(`${error.message}: task ${task.state} attempt ${task.attempt}\n${procs.map((p) => p.output()).join('\n---\n')}`);
      });
      writeFileSync(release, '');
      await allFinal(rt.db, rt.schema, [id], 60_000);
      const runs = await invocations(rt, table);
      expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
      expect(runs[1].pid).not.toBe(runs[0].pid);
      const hung = procs.find((p) => p.child.pid === runs[0].pid)!;
      await printed(hung, /no heartbeat has committed for/, 30_000);
      expect(hung.output()).toMatch(/the event loop has been blocked for \d+\.\d s, past the stall limit \(2\.0 s\)/);
      expect(await rt.workflow(id).waitUntilFinal({ timeoutMs: patient(20_000), pollMs: 20 })).toMatchObject({ state: 'completed' });
      expect((await rt.workflow(id).task('crunch')).output).toEqual({ pid: runs[1].pid });
    },
    patient(180_000),
  );
});
