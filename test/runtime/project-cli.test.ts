import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { braidBin, runCliInProcess } from '../helpers/cli.js';
import { printed } from '../helpers/processes.js';
import { backend, postgresUrl, uniqueSchema } from '../helpers/runtime.js';

/** A fresh application folder with the given files. */
function app(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'braid-app-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const CHILD = 'name: child\ntasks:\n  t: { kind: work }\n';
const PARENT = 'name: parent\ntasks:\n  kids: { start: { workflow: child, group: kids, inputs: {} } }\n';

describe(`the project config and the commands a team scripts (${backend})`, () => {
  // on Postgres each test's database is a schema of its own, named in the config
  const database = (schema: string) => (backend === 'postgres' ? `database: \${BRAID_TEST_PG}\nschema: ${schema}\n` : '');
  const env = backend === 'postgres' ? { BRAID_TEST_PG: postgresUrl, DATABASE_URL: '' } : { DATABASE_URL: '' };

  it('register deploys the configured definitions: new, unchanged, all or nothing, dry run, json; start never registers', async () => {
    const dir = app({
      'braid.config.yaml': `definitions: [workflows/**/*.yaml]\nignore: [workflows/drafts/**]\n${database(uniqueSchema())}`,
      'workflows/child.yaml': CHILD,
      'workflows/billing/parent.yaml': PARENT,
      'workflows/drafts/broken.yaml': 'name: broken\ntasks: {}\n',
      'package.json': '{"name":"app"}',
    });
    const unregistered = await runCliInProcess(['start', 'child'], { cwd: dir, env });
    expect(unregistered.code).toBe(1);
    expect(unregistered.stderr).toBe('workflow child is not registered; run braid register\n');
    const dry = await runCliInProcess(['register', '--dry-run'], { cwd: dir, env });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^child would be new [0-9a-f]{12}\nparent would be new [0-9a-f]{12}\n$/);
    expect((await runCliInProcess(['start', 'child'], { cwd: dir, env })).code).toBe(1);
    const first = await runCliInProcess(['register'], { cwd: dir, env });
    expect(first.code).toBe(0);
    expect(first.stdout.split('\n').map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual(['child new', 'parent new', '']);
    expect((await runCliInProcess(['register'], { cwd: dir, env })).stdout).toBe('child unchanged\nparent unchanged\n');
    // a broken definition: nothing registers, the valid change included
    writeFileSync(join(dir, 'workflows/child.yaml'), CHILD.replace('kind: work', 'kind: work2'));
    writeFileSync(join(dir, 'workflows/billing/parent.yaml'), PARENT.replace('kids: {', 'kids: { deps: [nope],'));
    const refused = await runCliInProcess(['register', '--format', 'json'], { cwd: dir, env });
    expect(refused.code).toBe(1);
    const report = JSON.parse(refused.stdout);
    expect(report).toMatchObject({
      registered: false,
      workflows: [
        { name: 'child', status: 'new' },
        { name: 'parent', status: 'error' },
      ],
    });
    expect(report.diagnostics[0]).toMatchObject({ rule: 'unknown-dep', file: 'workflows/billing/parent.yaml' });
    const versions = JSON.parse((await runCliInProcess(['versions', 'child', '--json'], { cwd: dir, env })).stdout);
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatchObject({ current: true, running: 0 });
    // a typo of a registered name says which one it likely is, whatever the command
    for (const command of [
      ['start', 'chidl'],
      ['versions', 'chidl'],
      ['upgrade', 'chidl'],
    ])
      expect(await runCliInProcess(command, { cwd: dir, env })).toMatchObject({ code: 1, stderr: 'workflow chidl is not registered; did you mean "child"?\n' });
    expect(await runCliInProcess(['compile', 'chidl'], { cwd: dir, env })).toMatchObject({
      code: 1,
      stderr: 'no workflow named "chidl" in braid.config.yaml definitions (workflows/**/*.yaml); did you mean "child"?\n',
    });
    const id = (await runCliInProcess(['start', 'child'], { cwd: dir, env })).stdout.trim();
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    expect((await runCliInProcess(['versions', 'child'], { cwd: dir, env })).stdout).toMatch(
      /^[0-9a-f]{12} {2}\d{4}-\d\d-\d\dT[\d:.]+Z {2}current {2}1 running {2}.*workflows\/child\.yaml\n$/,
    );
    expect(await runCliInProcess(['versions', 'nope'], { cwd: dir, env })).toMatchObject({
      code: 1,
      stderr: 'workflow nope is not registered; run braid register\n',
    });
    const list = await runCliInProcess(['list', '--json'], { cwd: dir, env });
    expect(JSON.parse(list.stdout).workflows.map((w: { id: string; state: string }) => [w.id, w.state])).toEqual([[id, 'running']]);
    expect((await runCliInProcess(['list', '--state', 'running', '--name', 'child'], { cwd: dir, env })).stdout).toMatch(
      new RegExp(`^ID +NAME +STATE +DONE +CREATED\\n${id} +child +running +0/1 +\\d{4}-`),
    );
    expect((await runCliInProcess(['list', '--state', 'sideways'], { cwd: dir, env })).code).toBe(2);
  }, 120_000);

  it("validate: the configured set by default; a changed file alone answers as a full run; other tools' files are never definitions", async () => {
    const dir = app({
      'braid.config.yaml': 'definitions: definitions\n',
      'definitions/child.yaml': CHILD,
      'definitions/parent.yaml': PARENT,
      'docker-compose.yml': 'services: { db: { image: postgres } }\n',
      'package.json': '{"name":"app"}',
      'sub/dir/.keep': '',
    });
    expect(await runCliInProcess(['validate'], { cwd: dir })).toMatchObject({ code: 0, stdout: '2 files checked: 0 errors, 0 warnings\n' });
    // from a subfolder, the config is found upwards
    expect(await runCliInProcess(['validate'], { cwd: join(dir, 'sub/dir') })).toMatchObject({ code: 0, stdout: '2 files checked: 0 errors, 0 warnings\n' });
    // the pre-commit case: only the changed file, whose start names a workflow in another file
    expect(await runCliInProcess(['validate', 'definitions/parent.yaml'], { cwd: dir })).toMatchObject({
      code: 0,
      stdout: '1 file checked: 0 errors, 0 warnings\n',
    });
    expect((await runCliInProcess(['validate', '.'], { cwd: dir })).stdout).toBe('2 files checked: 0 errors, 0 warnings\n');
    // without a config: the folder given, other tools' files skipped with a warning
    const bare = app({ 'child.yaml': CHILD, 'compose.yml': 'services: {}\n', 'tsconfig.json': '{"compilerOptions":{}}' });
    const run = await runCliInProcess(['validate', '.', '--format', 'json'], { cwd: bare });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).diagnostics.map((d: { file: string; severity: string; message: string }) => [d.file, d.severity, d.message])).toEqual([
      ['compose.yml', 'warning', 'not a workflow definition (it has neither "name" nor "tasks"): skipped'],
      ['tsconfig.json', 'warning', 'not a workflow definition (it has neither "name" nor "tasks"): skipped'],
    ]);
  });

  it('init scaffolds without overwriting, and what it writes validates and types', async () => {
    const dir = app({ 'src/handlers.ts': '// mine\n', '.gitignore': 'node_modules/' });
    const init = await runCliInProcess(['init'], { cwd: dir });
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('kept    src/handlers.ts (it exists)');
    expect(init.stdout).toContain('created definitions/hello.yaml');
    expect(init.stdout).toContain('created definitions/hello.test.yaml');
    expect(init.stdout).toMatch(/next:\n {2}npx braid validate .*\n {2}npx braid test .*\n {2}npx braid dev .*\n {2}npx braid start hello .*\n$/);
    expect(readFileSync(join(dir, 'src/handlers.ts'), 'utf8')).toBe('// mine\n');
    expect(readFileSync(join(dir, '.gitignore'), 'utf8')).toBe('node_modules/\n.braid/\n');
    expect((await runCliInProcess(['init'], { cwd: dir })).stdout).not.toContain('created');
    expect((await runCliInProcess(['validate'], { cwd: dir })).code).toBe(0);
    expect(readFileSync(join(dir, 'src/braid-types.d.ts'), 'utf8')).toContain(
      'export interface KindArgs {\n  goodbye: {\n    who: string;\n  };\n  greet: {\n    who: string;\n  };\n}',
    );
    expect((await runCliInProcess(['types', '--out', '-'], { cwd: dir })).stdout).toContain('export interface Inputs {\n  hello: {\n    who: string;\n  };\n}');
    // in an empty folder, both folders that are never committed are ignored
    const empty = app({});
    expect((await runCliInProcess(['init'], { cwd: empty })).stdout).toContain('created .gitignore (.braid/, node_modules/)\n');
    expect(readFileSync(join(empty, '.gitignore'), 'utf8')).toBe('.braid/\nnode_modules/\n');
  });

  it('a config with problems stops every command with its diagnostics; flags override it; a JSON config works too', async () => {
    const bad = app({ 'braid.config.yaml': 'definitons: defs\n' });
    const run = await runCliInProcess(['list'], { cwd: bad });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^braid\.config\.yaml:1:1: error: the config: unknown key "definitons" \[config\]/);
    // a kind served both ways, and an hmac-sha256 signature without its header: one clear line each
    const both = app({ 'braid.config.yaml': 'kinds:\n  ask: { worker: py, http: { url: "http://127.0.0.1:9/x" } }\n' });
    expect((await runCliInProcess(['validate'], { cwd: both })).stderr).toMatch(
      /^braid\.config\.yaml:2:8: error: kinds\.ask: a kind is served over HTTP \(http:\) or by another worker \(worker:\), not both \[config\]/,
    );
    const unsigned = app({ 'braid.config.yaml': 'events:\n  x.y:\n    signature: { scheme: hmac-sha256, secret_env: S }\n' });
    const said = (await runCliInProcess(['validate'], { cwd: unsigned })).stderr;
    expect(said.match(/error:/g)).toHaveLength(1);
    expect(said).toContain("events.x.y.signature: must have required property 'header'");
    const json = app({ 'braid.config.json': '{ "definitions": "flows" }', 'flows/child.yaml': CHILD, 'definitions/x.yaml': 'garbage: [' });
    expect((await runCliInProcess(['validate'], { cwd: json })).stdout).toBe('1 file checked: 0 errors, 0 warnings\n');
    expect((await runCliInProcess(['types', '--definitions', 'flows', '--out', '-'], { cwd: json })).stdout).toContain(
      't: Record<string, never>'.replace('t:', 'work:'),
    );
    expect(existsSync(join(json, '.braid'))).toBe(false);
  });

  it("start --timeout takes a duration; a kind no worker handles is said at the worker's start and while waiting", async () => {
    const dir = app({
      'braid.config.yaml': `${database(uniqueSchema())}handlers: handlers.mjs\n`,
      'definitions/child.yaml': CHILD,
      'handlers.mjs': 'export default { other: async () => ({}) };\n',
    });
    expect(await runCliInProcess(['start', 'child', '--wait', '--timeout', '60'], { cwd: dir, env })).toMatchObject({
      code: 2,
      stderr: 'braid: --timeout must be a duration such as 30s, 5m or 1h, not "60"\n',
    });
    // the deploy check knows the handlers module lacks the kind: register refuses, --force registers anyway
    const refused = await runCliInProcess(['register'], { cwd: dir, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('error: kind "work" has no handler in handlers.mjs: task "t" uses it [deploy-missing-handler]');
    expect((await runCliInProcess(['register', '--force'], { cwd: dir, env })).code).toBe(0);
    let log = '';
    const worker = spawn(process.execPath, [braidBin, 'worker'], { cwd: dir, env: { ...process.env, ...env } });
    worker.stdout.on('data', (d: Buffer) => (log += d.toString()));
    worker.stderr.on('data', (d: Buffer) => (log += d.toString()));
    try {
      await printed({ child: worker, output: () => log }, 'running 1 kind(s): other');
      expect(log).toContain('warning: no handler for kind "work" (used by child): its tasks wait for a worker that has one');
      const waited = await runCliInProcess(['start', 'child', '--wait', '--timeout', '2s'], { cwd: dir, env });
      expect(waited.code).toBe(1);
      expect(waited.stderr).toMatch(/child \w+: 0\/1 tasks done; t waiting for a handler; no live handler for kind "work"\n/);
      expect(waited.stderr).toMatch(/is still running after 2s\n$/);
    } finally {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.on('exit', r));
    }
  }, 90_000);
});
