import { describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/commands/status.js';
import { retrySelection } from '../../src/runtime/engine/decide.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

const shape = `name: shape
tasks:
  a: { kind: ok }
  gate:
    kind: ok
    wait: { terms: { go: { signal: go } } }
  bad: { kind: flaky, deps: [a], max_attempts: 1 }
  down: { kind: ok, deps: [bad] }
  ign: { kind: ok, deps: [bad], ignore_discarded_deps: true }
`;

async function failedRun() {
  const runs: string[] = [];
  let failing = true;
  const handlers: Handlers = {
    ok: async (_a, ctx) => (runs.push(ctx.taskName), { at: ctx.taskName }),
    flaky: async (_a, ctx) => {
      runs.push(ctx.taskName);
      if (failing) throw new Error('down for maintenance');
      return { fixed: true };
    },
  };
  const rt = await drivenRuntime({ handlers, definitions: { shape } });
  await rt.startWorker();
  const id = await rt.start('shape');
  const h = rt.workflow(id);
  await settled(rt, async () => (await h.task('gate')).wait?.phase === 'waiting');
  const first = await h.signals.emit('go', { n: 1 }, { idempotencyKey: 'go-1' });
  expect((await final(rt, h.id)).state).toBe('failed');
  const states = Object.fromEntries((await h.tasks()).map((t) => [t.name, t.state]));
  expect(states).toEqual({ a: 'completed', gate: 'completed', bad: 'discarded', down: 'cancelled', ign: 'completed' });
  runs.length = 0;
  failing = false;
  return { rt, h, runs, first };
}

describe('retry selection (pure)', () => {
  const tasks = [
    { name: 'a', state: 'completed', dependents: ['bad'] },
    { name: 'bad', state: 'discarded', dependents: ['down', 'ign'] },
    { name: 'down', state: 'cancelled', dependents: ['last'] },
    { name: 'ign', state: 'completed', dependents: ['last'] },
    { name: 'last', state: 'cancelled', dependents: [] },
  ];
  it('selects per mode', () => {
    expect([...retrySelection(tasks, 'all')].sort()).toEqual(['a', 'bad', 'down', 'ign', 'last']);
    expect([...retrySelection(tasks, 'failed_only')].sort()).toEqual(['bad', 'down', 'last']);
    expect([...retrySelection(tasks, 'failed_and_downstream')].sort()).toEqual(['bad', 'down', 'ign', 'last']);
  });
});

describe(`whole-workflow retry (${backend})`, () => {
  it('failed_only reruns the discarded task and the downstream that did not complete', async () => {
    const { rt, h, runs } = await failedRun();
    const r = await h.retry({ mode: 'failed_only' });
    expect(r).toEqual({ attempt: 2, retried: ['bad', 'down'], version: expect.any(String), current: expect.any(String) });
    expect((await final(rt, h.id)).state).toBe('completed');
    expect(runs.sort()).toEqual(['bad', 'down']);
    const bad = await h.task('bad');
    // without reset_history the attempt count and the errors go on
    expect(bad.attempt).toBe(2);
    expect(bad.errors.map((e) => e.message)).toEqual(['down for maintenance']);
    expect((await h.load()).attempt).toBe(2);
    // past its max_attempts by the retry: status says so rather than `2/1`
    expect(renderStatus(await h.status())).toMatch(/^bad +flaky +completed +2 \(max 1, retried\)$/m);
    await rt.stop();
  });

  it('failed_and_downstream also reruns completed downstream tasks; reset_history clears attempts and errors', async () => {
    const { rt, h, runs } = await failedRun();
    const r = await h.retry({ mode: 'failed_and_downstream', resetHistory: true });
    expect(r.retried).toEqual(['bad', 'down', 'ign']);
    expect((await final(rt, h.id)).state).toBe('completed');
    expect(runs.sort()).toEqual(['bad', 'down', 'ign']);
    const bad = await h.task('bad');
    expect(bad).toMatchObject({ attempt: 1, max_attempts: 1, errors: [] });
  });

  it('by default reruns what failed and what it held back, never a task that completed upstream (a charge, a link sent)', async () => {
    const { rt, h, runs } = await failedRun();
    const r = await h.retry();
    expect(r.retried).toEqual(['bad', 'down', 'ign']);
    expect((await final(rt, h.id)).state).toBe('completed');
    expect(runs.sort()).toEqual(['bad', 'down', 'ign']);
  });

  it('all, asked for by name, reruns everything: waits need a new signal in the new attempt; old signals stay visible by attempt', async () => {
    const { rt, h, runs, first } = await failedRun();
    const r = await h.retry({ mode: 'all' });
    expect(r.retried.sort()).toEqual(['a', 'bad', 'down', 'gate', 'ign']);
    await settled(rt, async () => (await h.task('gate')).wait?.phase === 'waiting');
    const gate = await h.task('gate');
    expect(gate.wait!.evidence).toBeNull();
    expect(gate.state).toBe('pending');
    // the first attempt's signal does not count for the second; its idempotency key is spent
    expect((await h.signals.list({ attempt: 1 })).signals.map((s) => s.id)).toEqual([first.signal.id]);
    expect((await h.signals.emit('go', { n: 1 }, { idempotencyKey: 'go-1' })).replayed).toBe(true);
    expect((await h.task('gate')).state).toBe('pending');
    const second = await h.signals.emit('go', { n: 2 }, { idempotencyKey: 'go-2', attempt: 2 });
    expect(second.signal.attempt).toBe(2);
    expect(second.resolved).toEqual(['gate']);
    expect((await final(rt, h.id)).state).toBe('completed');
    expect(runs.sort()).toEqual(['a', 'bad', 'down', 'gate', 'ign']);
    expect((await h.signals.list({ attempt: 2 })).signals.map((s) => s.id)).toEqual([second.signal.id]);
  });

  it('a running workflow cannot be retried; a mode that selects nothing changes nothing', async () => {
    const { rt, h: first } = await failedRun();
    // no worker runs the retried tasks meanwhile, so the workflow is still running at the second retry
    await rt.stop(1000);
    await first.retry({ mode: 'failed_only' });
    await expect(first.retry()).rejects.toThrow(/only a finalized workflow can be retried/);
    const again = await drivenRuntime({ schema: rt.schema, handlers: { ok: async () => ({}), flaky: async () => ({ fixed: true }) } });
    await again.startWorker();
    const h = again.workflow(first.id);
    await final(again, h.id);
    expect(await h.retry({ mode: 'failed_only' })).toMatchObject({ attempt: 2, retried: [] });
    expect((await h.load()).state).toBe('completed');
    await expect(again.workflow('nope').retry()).rejects.toThrow(/no workflow with id/);
  });
});
