import { describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, final, run, settled } from '../helpers/runtime.js';

const handlers: Handlers = {
  ok: async (_args, ctx) => ({ ran: ctx.taskName }),
  boom: async () => {
    throw new Error('always fails');
  },
  give_up: async (_args, ctx) => ctx.cancel('nothing to do'),
};

const states = (tasks: Record<string, { state: string }>) => Object.fromEntries(Object.entries(tasks).map(([k, v]) => [k, v.state]));

describe(`failed deps (${backend})`, () => {
  it('a discarded dep cancels its dependents unless they ignore discarded deps; cancellation cascades', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        discarded: `name: discarded
tasks:
  bad: { kind: boom, max_attempts: 1 }
  plain: { kind: ok, deps: [bad] }
  tolerant: { kind: ok, deps: [bad], ignore_discarded_deps: true }
  after_plain: { kind: ok, deps: [plain] }
  after_plain_tolerant: { kind: ok, deps: [plain], ignore_cancelled_deps: true }
  deep: { kind: ok, deps: [after_plain] }
  after_tolerant: { kind: ok, deps: [tolerant] }
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'discarded');
    expect(states(tasks)).toEqual({
      bad: 'discarded',
      plain: 'cancelled',
      tolerant: 'completed',
      after_plain: 'cancelled',
      after_plain_tolerant: 'completed',
      deep: 'cancelled',
      after_tolerant: 'completed',
    });
    expect(workflow.state).toBe('failed');
    expect(tasks.plain.errors.at(-1)).toMatchObject({ kind: 'dependency', message: 'dependency "bad" was discarded' });
    expect(tasks.deep.errors.at(-1)).toMatchObject({ message: 'dependency "after_plain" was cancelled' });
  });

  it('workflow-level ignore flags, and a task overriding the default back to false', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        defaults: `name: defaults
defaults: { ignore_discarded_deps: true, ignore_cancelled_deps: true }
tasks:
  bad: { kind: boom, max_attempts: 1 }
  quit: { kind: give_up }
  inherits: { kind: ok, deps: [bad, quit] }
  strict: { kind: ok, deps: [bad], ignore_discarded_deps: false }
  strict_cancel: { kind: ok, deps: [quit], ignore_cancelled_deps: false }
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'defaults');
    expect(states(tasks)).toEqual({ bad: 'discarded', quit: 'cancelled', inherits: 'completed', strict: 'cancelled', strict_cancel: 'cancelled' });
    expect(workflow.state).toBe('failed');
  });

  it('a cancelled dep (the handler cancelled its task) cancels dependents unless ignored', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        cancelled: `name: cancelled
tasks:
  quit: { kind: give_up }
  plain: { kind: ok, deps: [quit] }
  tolerant: { kind: ok, deps: [quit], ignore_cancelled_deps: true }
`,
      },
    });
    await rt.startWorker();
    const { tasks } = await run(rt, 'cancelled');
    expect(states(tasks)).toEqual({ quit: 'cancelled', plain: 'cancelled', tolerant: 'completed' });
    expect(tasks.quit.errors).toEqual([expect.objectContaining({ kind: 'cancel', message: 'nothing to do', attempt: 1 })]);
  });

  it('a deleted dep fails its dependents unless they ignore deleted deps', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        deleted: `name: deleted
tasks:
  later: { kind: ok, delay: 1h }
  plain: { kind: ok, deps: [later] }
  tolerant: { kind: ok, deps: [later], ignore_deleted_deps: true }
  next: { kind: ok, deps: [plain] }
`,
      },
    });
    await rt.startWorker();
    const id = await rt.start('deleted');
    expect((await rt.workflow(id).task('later')).state).toBe('scheduled');
    await rt.workflow(id).deleteTasks(['later']);
    const workflow = await final(rt, id);
    const tasks = Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t]));
    expect(states(tasks)).toEqual({ plain: 'cancelled', tolerant: 'completed', next: 'cancelled' });
    expect(tasks.plain.errors.at(-1)?.message).toBe('dependency "later" was deleted');
    expect(workflow).toMatchObject({ state: 'failed', tasks_open: 0 });
  });

  it('a workflow whose tasks all complete is completed; one with an ignored failure still ends failed', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        fine: 'name: fine\ntasks:\n  a: { kind: ok }\n',
        ignored: 'name: ignored\ntasks:\n  bad: { kind: boom, max_attempts: 1 }\n  b: { kind: ok, deps: [bad], ignore_discarded_deps: true }\n',
      },
    });
    await rt.startWorker();
    expect((await run(rt, 'fine')).workflow.state).toBe('completed');
    const ignored = await run(rt, 'ignored');
    expect(ignored.workflow.state).toBe('failed');
    await settled(rt, async () => (await rt.workflow(ignored.id).task('b')).state === 'completed');
  });
});
