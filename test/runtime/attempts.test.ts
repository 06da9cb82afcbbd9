import { describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, run, settled } from '../helpers/runtime.js';

const fast = 'retry: { backoff: constant, initial: 10ms, jitter: false }';

describe(`attempts: retries, timeouts, cancel and snooze (${backend})`, () => {
  it('retries with backoff, then succeeds; the error history is kept', async () => {
    let calls = 0;
    const handlers: Handlers = {
      flaky: async (_args, ctx) => {
        calls++;
        if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} failed`);
        return { attempt: ctx.attempt };
      },
    };
    const rt = await drivenRuntime({ handlers, definitions: { flaky: `name: flaky\ntasks:\n  t: { kind: flaky, max_attempts: 5, ${fast} }\n` } });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'flaky');
    expect(workflow.state).toBe('completed');
    expect(calls).toBe(3);
    expect(tasks.t).toMatchObject({ state: 'completed', attempt: 3, output: { attempt: 3 } });
    expect(tasks.t.errors.map((e) => [e.attempt, e.message])).toEqual([
      [1, 'attempt 1 failed'],
      [2, 'attempt 2 failed'],
    ]);
  });

  it('discards after max_attempts, with every error', async () => {
    const rt = await drivenRuntime({
      handlers: { bad: async (_a, ctx) => Promise.reject(new TypeError(`no ${ctx.attempt}`)) },
      definitions: { bad: `name: bad\ntasks:\n  t: { kind: bad, max_attempts: 3, ${fast} }\n  after: { kind: bad, deps: [t] }\n` },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'bad');
    expect(workflow.state).toBe('failed');
    expect(tasks.t.state).toBe('discarded');
    expect(tasks.t.errors.map((e) => [e.attempt, e.name, e.message])).toEqual([
      [1, 'TypeError', 'no 1'],
      [2, 'TypeError', 'no 2'],
      [3, 'TypeError', 'no 3'],
    ]);
    expect(tasks.t.errors[0].stack).toContain('TypeError: no 1');
    expect(tasks.after.state).toBe('cancelled');
  });

  it('exponential backoff schedules the retry in the future (retryable until promoted)', async () => {
    const rt = await drivenRuntime({
      handlers: { bad: async () => Promise.reject(new Error('x')) },
      definitions: { slow: 'name: slow\ntasks:\n  t: { kind: bad, max_attempts: 2, retry: { initial: 1h, jitter: false } }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('slow');
    await settled(rt, async () => (await rt.workflow(id).task('t')).state === 'retryable');
    const t = await rt.workflow(id).task('t');
    expect(new Date(t.scheduled_at).getTime() - Date.now()).toBeGreaterThan(3_500_000);
    expect((await rt.workflow(id).status()).tasks[0].pending_reason).toMatch(/^retrying at .* \(attempt 1 of 2 failed\)$/);
  });

  it('a timeout aborts the handler, counts as an error and frees the slot even when the abort is ignored', async () => {
    let lateFinished!: () => void;
    const late = new Promise<void>((resolve) => (lateFinished = resolve));
    const handlers: Handlers = {
      stubborn: async (_args, ctx) => {
        if (ctx.attempt === 1) {
          await new Promise((r) => setTimeout(r, 600));
          lateFinished();
          return { late: true };
        }
        return { attempt: ctx.attempt };
      },
      quick: async () => ({ ok: true }),
    };
    const rt = await drivenRuntime({
      handlers,
      queues: { default: 1 },
      definitions: { slowpoke: `name: slowpoke\ntasks:\n  t: { kind: stubborn, timeout: 100ms, max_attempts: 3, ${fast} }\n  other: { kind: quick }\n` },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'slowpoke');
    expect(workflow.state).toBe('completed');
    expect(tasks.t).toMatchObject({ attempt: 2, output: { attempt: 2 } });
    expect(tasks.t.errors[0]).toMatchObject({ attempt: 1, kind: 'timeout', message: 'timed out after 100 ms' });
    await late;
    await new Promise((r) => setTimeout(r, 100));
    expect((await rt.workflow(workflow.id).task('t')).output).toEqual({ attempt: 2 });
  });

  it('a handler can snooze without using up an attempt', async () => {
    let calls = 0;
    const rt = await drivenRuntime({
      handlers: {
        sleepy: async (_args, ctx) => {
          calls++;
          if (calls < 3) ctx.snooze(20);
          return { calls, attempt: ctx.attempt };
        },
      },
      definitions: { sleepy: 'name: sleepy\ntasks:\n  t: { kind: sleepy, max_attempts: 1 }\n' },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'sleepy');
    expect(workflow.state).toBe('completed');
    expect(tasks.t).toMatchObject({ attempt: 1, output: { calls: 3, attempt: 1 } });
  });

  it('non-Error throws and non-JSON outputs are recorded as the attempt error', async () => {
    const rt = await drivenRuntime({
      handlers: {
        throws_string: async () => {
          throw 'plain string';
        },
        throws_object: async () => Promise.reject({ code: 42 }),
        bigint: async () => ({ n: 10n }),
        nan: async () => ({ n: Number.NaN }),
        circular: async () => {
          const o: Record<string, unknown> = {};
          o.self = o;
          return o;
        },
        nothing: async () => undefined,
      },
      definitions: {
        weird: `name: weird
defaults: { max_attempts: 1 }
tasks:
  a: { kind: throws_string }
  b: { kind: throws_object }
  c: { kind: bigint }
  d: { kind: nan }
  e: { kind: circular }
  f: { kind: nothing }
`,
      },
    });
    await rt.startWorker();
    const { tasks } = await run(rt, 'weird');
    expect(tasks.a.errors[0].message).toBe('non-Error thrown: plain string');
    expect(tasks.b.errors[0].message).toBe('non-Error thrown: {"code":42}');
    expect(tasks.c.errors[0]).toMatchObject({ kind: 'output', message: "the handler's output is not JSON: a BigInt is not JSON" });
    expect(tasks.d.errors[0].message).toMatch(/NaN is not JSON/);
    expect(tasks.e.errors[0].message).toMatch(/not JSON/);
    expect(tasks.f).toMatchObject({ state: 'completed', output: null });
    for (const t of ['a', 'b', 'c', 'd', 'e']) expect(tasks[t].state).toBe('discarded');
  });

  it("an output over the runtime's default limit ends the task at once (output_too_large), not a crash", async () => {
    const rt = await drivenRuntime({
      maxOutputBytes: 1000,
      handlers: { big: async () => ({ blob: 'x'.repeat(5000) }) },
      definitions: { big: 'name: big\ntasks:\n  t: { kind: big }\n' },
    });
    await rt.startWorker();
    const { tasks } = await run(rt, 'big');
    expect(tasks.t.state).toBe('discarded');
    expect(tasks.t.errors).toHaveLength(1);
    expect(tasks.t.errors[0]).toMatchObject({
      code: 'output_too_large',
      message: expect.stringMatching(/5,011 bytes of JSON, over its max_output of 1,000 bytes/),
    });
  });
});
