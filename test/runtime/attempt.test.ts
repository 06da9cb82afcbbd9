import { describe, expect, it } from 'vitest';
import type { FetchedTask } from '../../src/runtime/sql/fetch.js';
import { Attempt } from '../../src/runtime/worker/attempt.js';
import { TaskCancelled, type TaskContext, TaskTimeout } from '../../src/runtime/worker/handlers.js';
import { ShutdownAbort } from '../../src/runtime/worker/task-errors.js';

function task(timeout_ms: number | null = null): FetchedTask {
  return {
    workflow_id: 'w1',
    name: 't',
    template: 't',
    kind: 'k',
    queue: 'default',
    attempt: 1,
    max_attempts: 3,
    args: { a: 1 },
    deps: [],
    dependents: [],
    dependents_wait: false,
    timeout_ms,
    start: null,
    dep_outputs: null,
    deferred: null,
    wait_evidence: null,
    tid: '(0,1)',
    flow_error: null,
  };
}

const ctxOf = (a: Attempt) =>
  ({
    get signal() {
      return a.signal;
    },
  }) as unknown as TaskContext;

describe('an attempt', () => {
  it('passes args and settles with the output of sync and async handlers, or what they threw', async () => {
    expect(await new Attempt(task(), 'w').run((args) => args, ctxOf(new Attempt(task(), 'w')))).toEqual({ a: 1 });
    expect(await new Attempt(task(), 'w').run(async () => 7, {} as TaskContext)).toBe(7);
    await expect(
      new Attempt(task(), 'w').run(() => {
        throw 'boom';
      }, {} as TaskContext),
    ).rejects.toBe('boom');
  });

  it('a signal first read after an abort is already aborted with its reason', async () => {
    const a = new Attempt(task(), 'w');
    const reason = new TaskCancelled('workflow cancelled');
    a.abort(reason);
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe(reason);
  });

  it('a workflow cancel only aborts: the handler may still finish', async () => {
    const a = new Attempt(task(), 'w');
    const ctx = ctxOf(a);
    const run = a.run(async (_args, c) => {
      await new Promise((r) => c.signal.addEventListener('abort', r));
      return 'finished anyway';
    }, ctx);
    a.abort(new TaskCancelled('workflow cancelled'));
    expect(await run).toBe('finished anyway');
  });

  it('a timeout settles the attempt even when the handler ignores the abort', async () => {
    const a = new Attempt(task(20), 'w');
    const run = a.run(() => new Promise(() => undefined), ctxOf(a));
    await expect(run).rejects.toBeInstanceOf(TaskTimeout);
    expect(a.signal.reason).toBeInstanceOf(TaskTimeout);
    a.dispose();
  });

  it('a shutdown after a cancel still settles a handler that ignores both', async () => {
    const a = new Attempt(task(), 'w');
    const run = a.run(() => new Promise(() => undefined), ctxOf(a));
    a.abort(new TaskCancelled('workflow cancelled'));
    a.abort(new ShutdownAbort());
    await expect(run).rejects.toBeInstanceOf(ShutdownAbort);
    expect(a.signal.reason).toBeInstanceOf(TaskCancelled);
  });
});
