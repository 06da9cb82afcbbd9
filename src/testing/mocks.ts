/**
 * The handlers a workflow test runs: for every kind its workflows use, one that finds the task's mock (by task
 * name, `WORKFLOW.TASK` for a child's task, or `kind:NAME`) and plays it, or runs the project's own handler
 * for the kind; with neither, the attempt fails naming the kind.
 */
import { type NormalizedDefinition, START_KIND } from '../compiler/normalize.js';
import { NonRetryableError } from '../runtime/index.js';
import type { Handler, Handlers, TaskContext } from '../runtime/worker/handlers.js';
import type { Mock } from './test-file.js';
import type { VirtualClock } from './virtual-clock.js';

export interface MockSetup {
  /** The workflow under test; its tasks' mocks are named without a workflow. */
  workflow: string;
  /** It and every workflow it starts. */
  tree: readonly NormalizedDefinition[];
  mocks: Record<string, Mock>;
  project?: Handlers;
  clock: VirtualClock;
  /** The workflow name of a running workflow id (children are started by the runtime). */
  nameOf: (workflowId: string) => Promise<string>;
  /** Where each attempt's start is written, in order: the task's name (a child's as WORKFLOW.TASK). */
  started?: string[];
}

/** The task a for_each expansion comes from: `ship[p1]` is a `ship`. */
export const templateOf = (taskName: string) => taskName.replace(/\[[^\]]*\]$/, '');

/** The mock that applies to a task, if any: its own by name first, then its kind's. */
export function findMock(mocks: Record<string, Mock>, root: string, workflow: string, task: string, kind: string): Mock | undefined {
  const own = workflow === root ? mocks[task] : mocks[`${workflow}.${task}`];
  return own ?? mocks[`kind:${kind}`];
}

/**
 * The tasks of a workflow tree that would run on nothing: no mock of their own or of their kind, and no
 * project handler for the kind. A test with any fails at once, naming them, rather than retrying in vain.
 */
export function unhandled(tree: readonly NormalizedDefinition[], root: string, mocks: Record<string, Mock>, project: Handlers | undefined): string[] {
  return tree.flatMap((d) =>
    d.tasks
      .filter((t) => t.kind !== START_KIND)
      .filter((t) => {
        const mock = findMock(mocks, root, d.name, t.name, t.kind);
        return !project?.[t.kind] && (!mock || mock.handler === 'real');
      })
      .map((t) => `${d.name === root ? '' : `${d.name}.`}${t.name} (kind "${t.kind}")`),
  );
}

export class MockFailure extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'MockFailure';
  }
}

export function mockHandlers(setup: MockSetup): Handlers {
  const kinds = new Set(setup.tree.flatMap((d) => d.tasks.filter((t) => t.kind !== START_KIND).map((t) => t.kind)));
  const handlers: Handlers = {};
  for (const kind of kinds) handlers[kind] = dispatch(setup, kind);
  // a task added by an extension may run a kind no definition names: the project's handler runs it
  for (const [kind, handler] of Object.entries(setup.project ?? {})) handlers[kind] ??= handler;
  return handlers;
}

function dispatch(setup: MockSetup, kind: string): Handler {
  return async (args: unknown, ctx: TaskContext) => {
    const workflow = await setup.nameOf(ctx.workflowId);
    setup.started?.push(workflow === setup.workflow ? ctx.taskName : `${workflow}.${ctx.taskName}`);
    const task = templateOf(ctx.taskName);
    const mock = findMock(setup.mocks, setup.workflow, workflow, task, kind);
    const real = setup.project?.[kind];
    if (!mock || mock.handler === 'real') {
      if (real) return real(args, ctx);
      throw new MockFailure(
        mock
          ? `task "${task}" of ${workflow} is mocked with handler: real, but the project has no handler for kind "${kind}"`
          : `no mock for task "${task}" of ${workflow} and no handler for its kind "${kind}"`,
      );
    }
    return play(mock, ctx, setup, workflow, task);
  };
}

async function play(mock: Mock, ctx: TaskContext, setup: MockSetup, workflow: string, task: string): Promise<unknown> {
  if (mock.delay_ms !== undefined) {
    // a task's timeout holds in virtual time too
    const timeout = setup.tree.find((d) => d.name === workflow)?.tasks.find((t) => t.name === task)?.timeout_ms ?? null;
    if (timeout !== null && timeout < mock.delay_ms) {
      await setup.clock.sleep(timeout, ctx.signal);
      throw new MockFailure(`timed out after ${timeout} ms (virtual time; the mock takes ${mock.delay_ms} ms)`);
    }
    await setup.clock.sleep(mock.delay_ms, ctx.signal);
  }
  if (mock.error !== undefined) {
    if (mock.retry === false) throw new NonRetryableError(mock.error, { code: mock.code });
    throw new MockFailure(mock.error, mock.code);
  }
  if (mock.fail !== undefined && ctx.attempt <= mock.fail) throw new MockFailure(`mocked failure ${ctx.attempt} of ${mock.fail}`, mock.code);
  return mock.output === undefined ? null : structuredClone(mock.output);
}
