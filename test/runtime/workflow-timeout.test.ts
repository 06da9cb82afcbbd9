import { describe, expect, it } from 'vitest';
import { compile } from '../../src/compiler/instantiate.js';
import { validate } from '../../src/compiler/validate.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

const verify = `name: verify
timeout: 3d
tasks:
  welcome: { kind: quick }
  activate:
    kind: quick
    deps: [welcome]
    wait:
      terms:
        verified: { signal: email_verified }
  report: { kind: quick, deps: [activate] }
`;

const slow = `name: slow
timeout: 1h
tasks:
  crunch: { kind: hang }
  after: { kind: quick, deps: [crunch] }
`;

describe(`workflow timeout (${backend})`, () => {
  it('while a wait is pending: the open tasks are cancelled, the workflow fails with reason timeout', async () => {
    const clock = new VirtualClock(new Date());
    const handlers: Handlers = { quick: async () => ({}) };
    // no leader of its own: the test runs maintenance itself, at the times it chooses
    const rt = await drivenRuntime({ handlers, virtualClock: clock, workerDeadAfterMs: 86_400_000, leader: false, definitions: { verify } });
    await rt.startWorker();
    const id = await rt.start('verify');
    const h = rt.workflow(id);
    await settled(rt, async () => (await h.task('activate')).wait?.phase === 'waiting');
    expect((await h.load()).deadline_at).toBeInstanceOf(Date);
    clock.advance(2 * 86_400_000);
    expect((await rt.maintenance()).timed_out).toBe(0);
    clock.advance(86_400_000 + 1000);
    expect((await rt.maintenance()).timed_out).toBe(1);
    const w = await final(rt, id);
    expect(w).toMatchObject({ state: 'failed', end_reason: 'timeout' });
    const tasks = Object.fromEntries((await h.tasks()).map((t) => [t.name, t]));
    expect([tasks.welcome.state, tasks.activate.state, tasks.report.state]).toEqual(['completed', 'cancelled', 'cancelled']);
    expect(tasks.activate.errors.at(-1)).toMatchObject({ kind: 'timeout', message: 'workflow timed out' });
    await expect(h.signals.emit('email_verified', {})).rejects.toMatchObject({ code: 'workflow_finished' });
    expect((await rt.maintenance()).timed_out).toBe(0);
  });

  it('while a handler runs: it is aborted, and the workflow fails with reason timeout', async () => {
    const clock = new VirtualClock(new Date());
    let aborted = false;
    const handlers: Handlers = {
      quick: async () => ({}),
      // ten hours, unless aborted
      hang: (_a, ctx) =>
        clock.sleep(36_000_000, ctx.signal).catch((e: unknown) => {
          aborted = true;
          throw e;
        }),
    };
    const rt = await drivenRuntime({ handlers, virtualClock: clock, workerDeadAfterMs: 86_400_000, leader: false, definitions: { slow } });
    await rt.startWorker();
    const id = await rt.start('slow');
    const h = rt.workflow(id);
    await settled(rt, async () => (await h.task('crunch')).state === 'running');
    clock.advance(3_600_000 + 1000);
    expect((await rt.maintenance()).timed_out).toBe(1);
    const w = await final(rt, id);
    expect(aborted).toBe(true);
    expect(w).toMatchObject({ state: 'failed', end_reason: 'timeout' });
    expect((await h.tasks()).map((t) => [t.name, t.state])).toEqual([
      ['crunch', 'cancelled'],
      ['after', 'cancelled'],
    ]);
    // a retry is a new attempt with a new deadline
    const retried = await h.retry({ mode: 'all' });
    expect(retried.attempt).toBe(2);
    const again = await h.load();
    expect(again).toMatchObject({ state: 'running', end_reason: null });
    expect(again.deadline_at!.getTime()).toBeGreaterThan(clock.now().getTime() + 3_500_000);
  });

  it('a cancel before the deadline still ends cancelled', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({ virtualClock: clock, retention: { closedMs: null, cancelledMs: null }, definitions: { verify } });
    const id = await rt.start('verify');
    await rt.workflow(id).cancel();
    clock.advance(4 * 86_400_000);
    expect((await rt.maintenance()).timed_out).toBe(0);
    expect(await rt.workflow(id).load()).toMatchObject({ state: 'cancelled', end_reason: null });
  });
});

describe('workflow timeout in the language', () => {
  it('is a duration longer than 0, carried by the plan only when set', () => {
    const ok = validate([{ path: 'verify.yaml', content: verify }]);
    expect(ok.errors).toBe(0);
    const plan = compile(ok.definitions[0], {}, { id: 'w1', now: '2026-01-01T00:00:00Z' });
    expect(plan.workflow.timeout_ms).toBe(3 * 86_400_000);
    const none = validate([{ path: 'slow.yaml', content: slow.replace('timeout: 1h\n', '') }]);
    expect('timeout_ms' in compile(none.definitions[0], {}, { id: 'w1', now: '2026-01-01T00:00:00Z' }).workflow).toBe(false);
    const zero = validate([{ path: 'slow.yaml', content: slow.replace('1h', '0s') }]);
    expect(zero.diagnostics.map((d) => `${d.rule} ${d.line}:${d.column}`)).toEqual(['invalid-duration 2:10']);
  });
});
