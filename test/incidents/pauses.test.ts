import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import { OperationInvalidError, PauseNotFoundError, type Runtime } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, definitionsDir, drivenRuntime, final, postgresUrl, settle } from '../helpers/runtime.js';

const chain = (name: string, extra = '') =>
  `name: ${name}\ntasks:\n  a: { kind: ka, queue: payments }\n  b: { kind: kb, deps: [a], queue: payments${extra} }\n  c: { kind: kc, deps: [b] }\n`;

const states = async (rt: Runtime, id: string) => Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t.state]));

const ok = async () => ({ ok: true });
const queues = { payments: 5, default: 5 };

describe(`pause without a deploy (${backend})`, () => {
  it('a paused queue holds its tasks (a running one finishes) across a register of a new version and a worker restart; resume releases them', async () => {
    let rt!: Runtime;
    const handlers = {
      // the pause is made while `a` runs: `a` finishes, and its dependent in the queue is not claimed
      ka: async () => {
        await rt.pauses.pause('queue', 'payments', { actor: 'ada', reason: 'stripe outage' });
        return { ok: true };
      },
      kb: ok,
      kc: ok,
    };
    rt = await drivenRuntime({ definitions: { pay: chain('pay') }, handlers, queues });
    await rt.startWorker();
    const id = await rt.start('pay');
    await settle(rt);
    expect(await states(rt, id)).toEqual({ a: 'completed', b: 'available', c: 'pending' });
    const status = await rt.workflow(id).status();
    const b = status.tasks.find((t) => t.name === 'b')!;
    expect(b.pending_reason).toMatch(/^paused \(queue payments, by ada at \d{4}-\d\d-\d\dT[\d:.]+Z: "stripe outage"\)$/);
    expect(status.pauses).toMatchObject([{ scope: 'queue', target: 'payments', actor: 'ada', reason: 'stripe outage' }]);
    await expect(rt.workflow(id).waitDiagnostics('b')).rejects.toThrow(
      /^task "b" has no wait: it is available and not started yet: paused \(queue payments, by ada/,
    );
    expect(status.audit).toEqual([]);

    // a new version registered, and the worker restarted: the pause holds
    const changed = await rt.registerDefinitions(definitionsDir({ pay: chain('pay', ', timeout: 1h') }));
    expect(changed.registered.map((r) => r.name)).toEqual(['pay']);
    await rt.stop(0);
    await rt.startWorker();
    await settle(rt);
    expect((await states(rt, id)).b).toBe('available');
    expect(await rt.pauses.list()).toHaveLength(1);

    const resumed = await rt.pauses.resume('queue', 'payments', { actor: 'bob', reason: 'stripe is back' });
    expect(resumed).toMatchObject({ scope: 'queue', target: 'payments', actor: 'ada' });
    expect((await final(rt, id)).state).toBe('completed');
    expect(await rt.pauses.list()).toEqual([]);
  });

  it('a paused kind holds that kind in every workflow; a paused workflow name takes starts that wait; each lifts alone', async () => {
    const rt = await drivenRuntime({ definitions: { one: chain('one'), two: chain('two') }, handlers: { ka: ok, kb: ok, kc: ok }, queues });
    await rt.startWorker();
    await rt.pauses.pause('kind', 'kb', { actor: 'ada' });
    await rt.pauses.pause('workflow', 'two', { actor: 'ada', reason: 'bad deploy' });
    const one = await rt.start('one');
    const two = await rt.start('two');
    await settle(rt);
    expect(await states(rt, one)).toEqual({ a: 'completed', b: 'available', c: 'pending' });
    expect(await states(rt, two)).toEqual({ a: 'available', b: 'pending', c: 'pending' });
    expect((await rt.workflow(two).status()).tasks[0].pending_reason).toMatch(/^paused \(workflow two, by ada at .*: "bad deploy"\)$/);
    await rt.pauses.resume('workflow', 'two');
    await settle(rt);
    expect(await states(rt, two)).toEqual({ a: 'completed', b: 'available', c: 'pending' });
    await rt.pauses.resume('kind', 'kb');
    expect((await final(rt, one)).state).toBe('completed');
    expect((await final(rt, two)).state).toBe('completed');
  });

  it('tasks with flow control of a paused workflow name are not picked; others of the queue are', async () => {
    const flowed = (name: string) => `name: ${name}\ntasks:\n  a: { kind: ka, concurrency: { key: '"one"', limit: 1 } }\n`;
    const rt = await drivenRuntime({ definitions: { held: flowed('held'), free: flowed('free') }, handlers: { ka: ok } });
    await rt.startWorker();
    await rt.pauses.pause('workflow', 'held');
    const held = await rt.start('held');
    const free = await rt.start('free');
    expect((await final(rt, free)).state).toBe('completed');
    await settle(rt);
    expect((await states(rt, held)).a).toBe('available');
    await rt.pauses.resume('workflow', 'held');
    expect((await final(rt, held)).state).toBe('completed');
  });

  it('refuses what it cannot take, with one clear error each', async () => {
    const rt = await drivenRuntime({ definitions: { one: chain('one') } });
    await expect(rt.pauses.pause('lane' as never, 'x')).rejects.toThrow(
      new OperationInvalidError('a pause\'s scope is one of queue, kind, workflow, not "lane"'),
    );
    await expect(rt.pauses.pause('queue', '  ')).rejects.toThrow(/the queue to pause is required/);
    await expect(rt.pauses.pause('queue', 'q', { reason: 'x'.repeat(2001) })).rejects.toThrow(/the reason is 2001 characters long; at most 2000/);
    await expect(rt.pauses.pause('queue', 'q', { actor: 'a\u0000b' })).rejects.toThrow(/the actor has control characters/);
    await expect(rt.pauses.pause('queue', 'q', { reason: 'half \ud800' })).rejects.toThrow(/lone surrogate/);
    await expect(rt.pauses.resume('queue', 'never')).rejects.toThrow(PauseNotFoundError);
    expect(await rt.pauses.list()).toEqual([]);
  });
});

describe(`pauses through the API and the CLI (${backend})`, () => {
  it('the API pauses, lists and resumes; status says why; the metrics count pauses; the CLI does the same', async () => {
    const rt = await drivenRuntime({ definitions: { pay: chain('pay') }, handlers: { ka: ok, kb: ok, kc: ok }, queues });
    await rt.startWorker();
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      const api = new ApiClient(server.url, 'tok-tok-tok-tok-1');
      expect(await api.setPause('pause', 'queue', 'payments', { actor: 'ops-bot', reason: 'incident' })).toMatchObject({ actor: 'ops-bot' });
      const id = await rt.start('pay');
      await settle(rt);
      const status = await api.status(id);
      expect(status.tasks[0].pending_reason).toMatch(/^paused \(queue payments, by ops-bot at .*: "incident"\)$/);
      expect((await api.pauses()).map((p) => p.target)).toEqual(['payments']);
      await expect(api.setPause('resume', 'queue', 'nope', {})).rejects.toMatchObject({ status: 404, code: 'pause_not_found' });
      // held to the route's declared body before the runtime sees it
      await expect(api.setPause('pause', 'shelf' as never, 'x', {})).rejects.toMatchObject({
        status: 400,
        code: 'bad_request',
        message: '"scope" is one of queue, kind, workflow',
      });
      await api.setPause('resume', 'queue', 'payments', {});
      expect((await final(rt, id)).state).toBe('completed');
    } finally {
      await server.close();
    }
    const { Metrics } = await import('../../src/index.js');
    const metrics = new Metrics(rt.db, rt.schema);
    await rt.pauses.pause('kind', 'kb');
    expect(await metrics.text()).toMatch(/braid_paused\{scope="kind"\} 1\n/);
  });

  it.runIf(backend === 'postgres')('braid pause, pauses, status and resume on the command line, the actor from BRAID_ACTOR', async () => {
    const rt = await drivenRuntime({ definitions: { pay: chain('pay') }, handlers: { ka: ok, kb: ok, kc: ok }, queues });
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const paused = await runCliInProcess(['pause', '--queue', 'payments', '--reason', 'stripe outage', ...db], { env: { BRAID_ACTOR: 'ci-bot' } });
    expect(paused.stdout).toMatch(/^paused \(queue payments, by ci-bot at .*: "stripe outage"\)\n$/);
    expect(paused.code).toBe(0);
    expect((await runCliInProcess(['pauses', ...db])).stdout).toMatch(/^paused \(queue payments, by ci-bot/);
    const id = await rt.start('pay');
    const shown = await runCliInProcess(['status', id, ...db]);
    expect(shown.stdout).toMatch(/^a +ka +available +0\/\d+ +paused \(queue payments, by ci-bot at .*: "stripe outage"\); no live handler for kind "ka"$/m);
    const both = await runCliInProcess(['pause', '--queue', 'q', '--kind', 'k', ...db]);
    expect([both.code, both.stderr]).toEqual([2, expect.stringMatching(/pause takes one of --queue, --kind or --workflow/)]);
    const missing = await runCliInProcess(['resume', '--kind', 'nothing', ...db]);
    expect([missing.code, missing.stderr.trim()]).toEqual([1, 'kind nothing is not paused (braid pauses lists what is)']);
    const resumed = await runCliInProcess(['resume', '--queue', 'payments', '--actor', 'ada', ...db]);
    expect(resumed.stdout).toMatch(/^resumed queue payments/);
    expect((await runCliInProcess(['pauses', '--json', ...db])).stdout).toBe('{"pauses":[]}\n');
  });
});

describe.runIf(backend === 'pglite')('pause and resume steps in braid test', () => {
  it('a test pauses a queue, expects what it holds, and resumes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-pause-test-'));
    mkdirSync(join(dir, 'definitions'));
    const gated = 'name: pay\ntasks:\n  a:\n    kind: ka\n    queue: payments\n    wait: { expr: go, signals: [go], terms: { go: { signal: go } } }\n';
    writeFileSync(join(dir, 'definitions', 'pay.yaml'), gated);
    writeFileSync(
      join(dir, 'definitions', 'pay.test.yaml'),
      [
        'workflow: pay',
        'tests:',
        '  - name: a paused queue holds its tasks',
        '    mocks: { a: { output: {} } }',
        '    steps:',
        '      - pause: { queue: payments }',
        '      - signal: { key: go }',
        '      - advance: 1h',
        '      - expect: { state: running, tasks: { a: available } }',
        '      - resume: { queue: payments }',
        '    expect: { state: completed }',
        '',
      ].join('\n'),
    );
    const tested = await runCliInProcess(['test'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(tested.stdout).toContain('1 passed, 0 failed');
    writeFileSync(join(dir, 'definitions', 'pay.test.yaml'), 'workflow: pay\ntests:\n  - name: x\n    steps:\n      - pause: { queue: q, kind: k }\n');
    const refused = await runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toMatch(/pay\.test\.yaml:5:\d+: error/);
  });
});
