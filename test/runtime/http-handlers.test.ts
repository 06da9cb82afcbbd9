import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody, verifySignature } from '../../src/http.js';
import { httpHandler } from '../../src/index.js';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';
import { tempProject } from '../helpers/dev-process.js';
import { advance, backend, clockOf, drivenRuntime, final, postgresUrl, settle, uniqueSchema } from '../helpers/runtime.js';

const SECRET = 'whsec_test_0123456789abcdef';
// Debian's python3 (the one .ci/run installs packages for) when it is there
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

let server: ChildProcess;
let base: string;

interface Seen {
  path: string;
  verified: boolean;
  workflow: string | null;
  task: string | null;
  attempt: number | null;
}
const seen = async (): Promise<Seen[]> => (await fetch(`${base}/seen`)).json() as Promise<Seen[]>;

beforeAll(async () => {
  server = spawn(PYTHON, [join(repoRoot, 'test', 'fixtures', 'http', 'handler_server.py')], {
    env: { ...process.env, BRAID_TEST_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // ready when it says where it listens
  base = await new Promise<string>((resolve, reject) => {
    let said = '';
    server.stdout!.on('data', (b: Buffer) => {
      said += b.toString();
      const port = /listening (\d+)\n/.exec(said)?.[1];
      if (port) resolve(`http://127.0.0.1:${port}`);
    });
    server.on('exit', (code) => reject(new Error(`the Python handler server exited (${code})`)));
  });
});

afterAll(() => {
  server?.kill();
});

const kind = (path: string, extra: { timeoutMs?: number; secret?: string; maxOutputBytes?: number } = {}) =>
  httpHandler(path.slice(1), { url: `${base}${path}`, secret: SECRET, ...extra });

const one = (name: string, kindName: string, more = '') => `name: ${name}\ntasks:\n  t: { kind: ${kindName}, max_attempts: 3${more} }\n`;

describe(`HTTP handlers, against a Python http.server (${backend})`, () => {
  it('a 2xx body is the output and flows to a dependent; the server verified every signature', async () => {
    const used: unknown[] = [];
    const rt = await drivenRuntime({
      handlers: { ok: kind('/ok'), use: async (args) => void used.push(args) },
      definitions: {
        mail: 'name: mail\ntasks:\n  greet: { kind: ok, args: { name: ada } }\n  after: { kind: use, deps: [greet], args: { g: "${{ deps.greet.output.greeting }}" } }\n',
      },
    });
    await rt.startWorker();
    const id = await rt.start('mail');
    await settle(rt);
    expect((await final(rt, id)).state).toBe('completed');
    expect((await rt.workflow(id).task('greet')).output).toEqual({ greeting: 'hello ada', deps: {} });
    expect(used).toEqual([{ g: 'hello ada' }]);
    expect((await seen()).filter((s) => s.workflow === id)).toEqual([{ path: '/ok', verified: true, workflow: id, task: 'greet', attempt: 1 }]);
  });

  it('a 404 ends the task after one attempt; a wrong secret is refused by the server (401) and ends it too', async () => {
    const rt = await drivenRuntime({
      handlers: { missing: kind('/missing'), forged: httpHandler('forged', { url: `${base}/ok`, secret: 'not-the-secret' }) },
      definitions: { lost: one('lost', 'missing'), forged: one('forged', 'forged') },
    });
    await rt.startWorker();
    const lost = await rt.start('lost');
    const forged = await rt.start('forged');
    await settle(rt);
    const t = await rt.workflow(lost).task('t');
    expect([(await final(rt, lost)).state, t.attempt, t.errors[0]]).toEqual([
      'failed',
      1,
      expect.objectContaining({ code: 'http_404', message: expect.stringContaining('answered 404') }),
    ]);
    expect((await rt.workflow(forged).task('t')).errors[0]).toMatchObject({ code: 'http_401' });
    expect((await seen()).find((s) => s.workflow === null && s.path === '/ok')).toMatchObject({ verified: false });
  });

  it('a 503 with Retry-After: 2 runs again 2 s later, without using an attempt', async () => {
    const rt = await drivenRuntime({ handlers: { busy: kind('/busy') }, definitions: { busy: one('busy', 'busy') } });
    await rt.startWorker();
    const id = await rt.start('busy');
    const asked = clockOf(rt).now().getTime();
    await settle(rt);
    const snoozed = await rt.workflow(id).task('t');
    expect(snoozed.state).toBe('scheduled');
    expect(new Date(snoozed.scheduled_at).getTime() - asked).toBe(2000);
    await advance(rt, 1999);
    expect((await seen()).filter((s) => s.workflow === id)).toHaveLength(1);
    await advance(rt, 1);
    await settle(rt);
    expect((await final(rt, id)).state).toBe('completed');
    expect((await rt.workflow(id).task('t')).attempt).toBe(1);
    expect((await seen()).filter((s) => s.workflow === id)).toHaveLength(2);
  });

  it("past the kind's timeout the request is aborted and the attempt retried; a body over max_output is output_too_large", async () => {
    const rt = await drivenRuntime({
      handlers: { slow: kind('/slow', { timeoutMs: 300 }), big: kind('/big', { maxOutputBytes: 1024 * 1024 }) },
      definitions: { slow: one('slow', 'slow', ', retry: { backoff: constant, initial: 1s }'), big: one('big', 'big') },
    });
    await rt.startWorker();
    const slow = await rt.start('slow');
    const big = await rt.start('big');
    expect((await final(rt, slow)).state).toBe('completed');
    const t = await rt.workflow(slow).task('t');
    expect([t.attempt, t.errors[0]]).toEqual([2, expect.objectContaining({ code: 'http_timeout', message: expect.stringContaining('within 300 ms') })]);
    expect((await final(rt, big)).state).toBe('failed');
    expect((await rt.workflow(big).task('t')).errors).toEqual([expect.objectContaining({ code: 'output_too_large' })]);
  });

  it("braid test serves the config's HTTP kinds (mocks apply to them too); a worker whose secret_env is unset says so", async () => {
    const config = (url: string, more = '') =>
      `definitions: definitions\nkinds:\n  ok:\n    http: { url: "${url}", secret_env: HOOK_SECRET, timeout: 5s${more} }\n    returns: { type: object, required: [greeting], properties: { greeting: { type: string } } }\n`;
    const dir = tempProject(
      {
        'mail.yaml': 'name: mail\ntasks:\n  greet: { kind: ok, args: { name: ada } }\n',
        'mail.test.yaml':
          'workflow: mail\ntests:\n  - name: over http\n    expect: { state: completed, tasks: { greet: { output: { greeting: hello ada, deps: {} } } } }\n' +
          '  - name: mocked\n    mocks: { greet: { output: { greeting: hi } } }\n    expect: { tasks: { greet: { output: { greeting: hi } } } }\n',
      },
      { 'braid.config.yaml': config('${HOOK_BASE}/ok') },
    );
    const tested = await runCliInProcess(['test'], { cwd: dir, env: { HOOK_BASE: base, HOOK_SECRET: SECRET } });
    expect([tested.code, tested.stdout]).toEqual([0, expect.stringContaining('2 passed, 0 failed')]);
    const unset = await runCliInProcess(['worker'], { cwd: dir, env: { HOOK_BASE: base, HOOK_SECRET: '' } });
    expect([unset.code, unset.stderr]).toEqual([1, expect.stringContaining('kinds.ok.http.secret_env names HOOK_SECRET, which is not set')]);
    const bad = await runCliInProcess(['worker'], { cwd: dir, env: { HOOK_BASE: 'ftp://x', HOOK_SECRET: SECRET } });
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining('kinds.ok.http.url is not an http:// or https:// URL')]);
    writeFileSync(join(dir, 'braid.config.yaml'), config('${HOOK_BASE}/ok', ', headers: { Authorization: "Bearer ${TOKEN}" }'));
    const broken = await runCliInProcess(['worker'], { cwd: dir, env: { HOOK_BASE: base, HOOK_SECRET: SECRET, TOKEN: 'a\nb' } });
    expect([broken.code, broken.stderr]).toEqual([1, expect.stringContaining('kinds.ok.http.headers.Authorization holds a line break')]);
  });

  it.runIf(backend === 'postgres')("braid register and plan count the config's HTTP kinds and another worker's kinds as handled", async () => {
    const dir = tempProject(
      { 'mail.yaml': 'name: mail\ntasks:\n  greet: { kind: ok }\n  after: { kind: local, deps: [greet] }\n  scored: { kind: py, deps: [greet] }\n' },
      {
        'braid.config.yaml':
          'definitions: definitions\nhandlers: handlers.mjs\nkinds:\n  ok: { http: { url: "http://127.0.0.1:9/ok" } }\n  py: { worker: python-side }\n',
        'handlers.mjs': 'export default { local: async () => ({}) };\n',
      },
    );
    const db = ['--database', postgresUrl, '--schema', uniqueSchema()];
    const registered = await runCliInProcess(['register', ...db], { cwd: dir });
    expect([registered.code, registered.stderr]).toEqual([0, expect.not.stringContaining('deploy-missing-handler')]);
    writeFileSync(join(dir, 'handlers.mjs'), 'export default {};\n');
    const missing = await runCliInProcess(['plan', ...db], { cwd: dir });
    expect(missing.stdout + missing.stderr).toContain('deploy-missing-handler');
    expect(missing.stdout + missing.stderr).not.toMatch(/kind "ok"|kind "py"/);
  });

  it('verifySignature accepts what signBody made, and refuses another body, another secret, an old time and garbage', () => {
    const body = '{"a":1}';
    const now = new Date('2027-01-01T00:00:00Z');
    const header = signBody(SECRET, body, now);
    expect(verifySignature({ secret: SECRET, header, body, now })).toEqual({ ok: true, t: now.getTime() / 1000 });
    expect(verifySignature({ secret: SECRET, header, body: Buffer.from(body), now }).ok).toBe(true);
    expect(verifySignature({ secret: SECRET, header, body: '{"a":2}', now }).ok).toBe(false);
    expect(verifySignature({ secret: 'other', header, body, now }).ok).toBe(false);
    expect(verifySignature({ secret: SECRET, header, body, now: new Date(now.getTime() + 301_000) })).toMatchObject({ ok: false });
    for (const junk of [undefined, '', 't=', 'v1=abc', 't=1,v1=zz', '====', `t=${'9'.repeat(40)},v1=00`])
      expect(verifySignature({ secret: SECRET, header: junk, body, now }).ok).toBe(false);
  });
});
