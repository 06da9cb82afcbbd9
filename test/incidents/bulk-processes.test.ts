import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NonRetryableError } from '../../src/index.js';
import { braidBin, repoRoot, runCliInProcess } from '../helpers/cli.js';
import { heavyFile } from '../helpers/heavy.js';
import { exited, printed, type RuntimeProcess } from '../helpers/processes.js';
import { backend, definitionsDir, postgresUrl, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

const A = 'name: w\ntasks:\n  a: { kind: a }\n';
const B = `${A}  b: { kind: b, deps: [a] }\n`;

/** `braid bulk ...` as an operator runs it in a terminal of its own (not a TTY: a progress line each tenth). */
function bulkProcess(args: string[]): RuntimeProcess {
  let out = '';
  const child = spawn(process.execPath, [braidBin, 'bulk', ...args], { cwd: repoRoot, env: { ...process.env, DATABASE_URL: '', BRAID_ACTOR: 'ada' } });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

describe.runIf(backend === 'postgres')('braid bulk as operators run it: 1,000 failed workflows', () => {
  it('a dry run prints 1000 and changes nothing; a run at 200/s killed mid-way and run again retries each on the current version once, in at least 5 s', async () => {
    const rt = await testRuntime({
      definitions: { w: A },
      handlers: {
        a: async () => {
          throw new NonRetryableError('partner down');
        },
      },
    });
    const s = `"${rt.schema}"`;
    const count = async (where: string) => (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.workflows WHERE ${where}`)).rows[0].n;
    await rt.startWorker();
    await rt.startMany(
      'w',
      Array.from({ length: 1000 }, (_, i) => ({ i })),
    );
    await until(async () => (await count(`state = 'failed'`)) === 1000, 120_000, 200);
    await rt.stop();
    const a = (await rt.definition('w'))!.hash;
    await rt.registerDefinitions(definitionsDir({ w: B }));
    const b = (await rt.definition('w'))!.hash;
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const select = ['retry', '--name', 'w', '--state', 'failed', '--version', a.slice(0, 12), '--on-current', '--as', 'INC-42'];

    const dry = await runCliInProcess(['bulk', ...select, '--dry-run', ...db]);
    expect(dry.stdout).toMatch(/^INC-42 would retry 1000 workflows: \S+, .* \(and 990 more\)\n$/);
    expect(await count(`state = 'failed' AND attempt = 1`)).toBe(1000);
    expect((await runCliInProcess(['bulk', 'list', ...db])).stdout).toBe('no bulk operations\n');

    const began = Date.now();
    const first = bulkProcess([...select, '--rate', '200/s', ...db]);
    await printed(first, /INC-42: [1-9]\d\d\/1000/, 60_000);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const partway = await count(`attempt = 2`);
    expect(partway).toBeGreaterThan(0);
    expect(partway).toBeLessThan(1000);

    // the rerun waits out the killed runner's mark, then continues where it stopped
    const rerun = await runCliInProcess(['bulk', ...select, '--rate', '200/s', ...db]);
    expect(rerun.stdout).toContain('INC-42 exists: continuing it');
    expect(rerun.stdout).toMatch(/INC-42 {2}retry {2}completed {2}1000\/1000 done {2}by ada\n$/);
    expect(rerun.code).toBe(0);
    expect(Date.now() - began).toBeGreaterThanOrEqual(5000);
    expect(await count(`attempt = 2 AND state = 'running' AND definition_hash = '${b}'`)).toBe(1000);

    // once more: the same operation, done; nothing is touched
    const again = await runCliInProcess(['bulk', ...select, ...db]);
    expect(again.stdout).toMatch(/INC-42 {2}retry {2}completed {2}1000\/1000 done/);
    expect(await count(`attempt = 2`)).toBe(1000);
    const status = JSON.parse((await runCliInProcess(['bulk', 'status', 'INC-42', '--json', ...db])).stdout);
    expect(status).toMatchObject({ name: 'INC-42', action: 'retry', state: 'completed', total: 1000, done: 1000, failed: 0, actor: 'ada', rate_per_s: 200 });
  }, 180_000);
});
