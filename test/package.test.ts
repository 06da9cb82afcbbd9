import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/cli.js';
import { printed } from './helpers/processes.js';
import { backend } from './helpers/runtime.js';

/**
 * braid as a team meets it: packed, installed from the tarball into a fresh application, and used there by
 * its CLI and its library, with nothing read from this repository. (Once per CI run: the embedded database.)
 */

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

let tarball: string;

function sh(cmd: string, args: string[], cwd: string, timeout = 120_000) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    timeout,
    env: { ...process.env, DATABASE_URL: '', NO_COLOR: '1', npm_config_update_notifier: 'false' },
  });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The node_modules of the first application, which braid was installed into from the tarball. */
let installed: string | undefined;

/**
 * A fresh application with braid installed from the tarball. What npm installs does not depend on the
 * application's module type, and an install is most of this file's time: the first application installs,
 * the others link to its node_modules.
 */
function application(type: 'module' | 'commonjs'): string {
  const dir = mkdtempSync(join(tmpdir(), `braid-app-${type}-`));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type }));
  if (installed !== undefined) {
    symlinkSync(installed, join(dir, 'node_modules'), 'dir');
    return dir;
  }
  const install = sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], dir, 240_000);
  if (install.code !== 0) throw new Error(`npm install failed: ${install.stderr}`);
  installed = join(dir, 'node_modules');
  return dir;
}

const braid = (dir: string, ...args: string[]) => sh(process.execPath, [join(dir, 'node_modules', 'braid', 'bin', 'braid.js'), ...args], dir);

describe.runIf(backend === 'pglite')('the package, installed into a fresh application', () => {
  beforeAll(() => {
    const out = mkdtempSync(join(tmpdir(), 'braid-pack-'));
    // dist is built by `npm test` before the suites run
    const packed = sh('npm', ['pack', '--ignore-scripts', '--pack-destination', out], repoRoot);
    if (packed.code !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
    tarball = join(out, readdirSync(out).find((f) => f.endsWith('.tgz'))!);
  }, 120_000);

  it('init, validate, register, a worker and start --wait to completion, on the embedded database', async () => {
    const dir = application('module');
    const init = braid(dir, 'init');
    expect(init.code).toBe(0);
    expect(braid(dir, 'validate')).toMatchObject({ code: 0, stdout: '2 files checked: 0 errors, 0 warnings\n' });
    // the scaffolded handlers type-check against braid's published types, strict and without skipLibCheck
    // (braid's own .d.ts files are checked too: the types they import come with braid)
    const tsc = sh(
      process.execPath,
      [join(repoRoot, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--module', 'nodenext', '--target', 'es2022', 'src/handlers.ts'],
      dir,
    );
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
    // the scaffolded test runs on the project's own handlers (src/handlers.ts) in virtual time
    const tested = braid(dir, 'test');
    expect(tested.stderr).toBe('');
    expect(tested).toMatchObject({ code: 0 });
    expect(tested.stdout).toMatch(/^2 passed, 0 failed /m);
    const library = sh(process.execPath, ['--input-type=module', '-e', "const t = await import('braid/testing'); console.log(typeof t.testWorkflow)"], dir);
    expect(library.stdout).toBe('function\n');
    // what the pre-commit hook runs (.pre-commit-hooks.yaml): the changed files, other YAML and JSON among them
    const hook = sh('npx', ['--no-install', 'braid', 'validate', 'definitions/hello.yaml', 'package.json'], dir);
    expect(hook).toMatchObject({ code: 0, stdout: '1 file checked: 0 errors, 0 warnings\n' });
    expect(hook.stderr).toContain('skipped 1 file(s) that are not among the configured definitions: package.json');
    const registered = braid(dir, 'register');
    expect(registered.code).toBe(0);
    expect(registered.stdout).toMatch(/^hello new [0-9a-f]{12}\n$/);
    let log = '';
    const worker = spawn(process.execPath, [join(dir, 'node_modules', 'braid', 'bin', 'braid.js'), 'worker'], {
      cwd: dir,
      env: { ...process.env, DATABASE_URL: '' },
    });
    children.push(worker);
    worker.stdout.on('data', (d: Buffer) => (log += d.toString()));
    worker.stderr.on('data', (d: Buffer) => (log += d.toString()));
    await printed({ child: worker, output: () => log }, 'running 2 kind(s): goodbye, greet');
    let out = '';
    const start = spawn(
      process.execPath,
      [join(dir, 'node_modules', 'braid', 'bin', 'braid.js'), 'start', 'hello', '--inputs', '{"who":"ada"}', '--wait', '--timeout', '60s'],
      { cwd: dir, env: { ...process.env, DATABASE_URL: '' } },
    );
    children.push(start);
    start.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => start.on('exit', (code) => resolve(code)));
    await printed({ child: start, output: () => out }, /^[0-9A-Z]{26}\n/, 30_000);
    const id = out.split('\n')[0];
    expect(braid(dir, 'signal', id, 'answer', '--payload', '{"text":"hi!"}')).toMatchObject({ code: 0 });
    expect(await exited).toBe(0);
    expect(JSON.parse(out.split('\n')[1])).toEqual({ greeting: 'hello ada', farewell: 'ada said: {"text":"hi!"}' });
    worker.kill('SIGTERM');
    await new Promise((resolve) => worker.on('exit', resolve));
    expect(log).toContain('stopped');

    // the documented production start, without npm in between: the SIGTERM reaches braid itself
    let directLog = '';
    const direct = spawn(join(dir, 'node_modules', '.bin', 'braid'), ['worker'], { cwd: dir, env: { ...process.env, DATABASE_URL: '' } });
    children.push(direct);
    direct.stdout.on('data', (d: Buffer) => (directLog += d.toString()));
    direct.stderr.on('data', (d: Buffer) => (directLog += d.toString()));
    await printed({ child: direct, output: () => directLog }, 'running 2 kind(s): goodbye, greet');
    direct.kill('SIGTERM');
    // 'close', not 'exit': the output is all read only once its pipes close
    await new Promise((resolve) => direct.on('close', resolve));
    expect(directLog).toMatch(/SIGTERM: stopping \(running handlers get/);
    expect(directLog).toMatch(/\bstopped\n/);
  }, 300_000);

  for (const type of ['module', 'commonjs'] as const) {
    it(`the library from a TypeScript file of a ${type === 'module' ? 'ESM' : 'CommonJS'} package; handler stack traces point at the source`, () => {
      const dir = application(type);
      writeFileSync(
        join(dir, 'flow.yaml'),
        'name: flow\ninputs: { type: object, properties: { n: { type: integer } } }\ntasks:\n  twice: { kind: ' +
          'twice, args: { n: "${{ inputs.n }}" } }\n  fail: { kind: fail, deps: [twice], max_attempts: 1 }\n',
      );
      writeFileSync(
        join(dir, 'main.ts'),
        `import { createPglite, createRuntime, defineHandlers } from 'braid';

async function main(): Promise<void> {
  const db = await createPglite();
  const handlers = defineHandlers<{ twice: { n: number }; fail: Record<string, never> }>({
    twice: async (args) => ({ n: args.n * 2 }),
    fail: async () => {
      throw new Error('from the application');
    },
  });
  const rt = createRuntime({ database: db, handlers });
  await rt.migrate();
  await rt.registerDefinitions(['flow.yaml']);
  await rt.startWorker();
  const w = await rt.workflow(await rt.start('flow', { n: 21 })).waitUntilFinal({ timeoutMs: 30_000, pollMs: 20 });
  const tasks = Object.fromEntries((await rt.workflow(w.id).tasks()).map((t) => [t.name, t]));
  console.log(JSON.stringify({ state: w.state, output: tasks.twice.output, stack: tasks.fail.errors[0].stack.split('\\n')[1].trim() }));
  await rt.close();
  await db.close();
}
void main();
`,
      );
      const run = sh(process.execPath, [join(dir, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'main.ts'], dir);
      expect(run.stderr).toBe('');
      const result = JSON.parse(run.stdout);
      expect(result).toMatchObject({ state: 'failed', output: { n: 42 } });
      expect(result.stack).toMatch(new RegExp(`^at fail \\(${join(dir, 'main.ts').replace(/[.]/g, '\\.')}:8:13\\)$`));
    }, 300_000);
  }
});
