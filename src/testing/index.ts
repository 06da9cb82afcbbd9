/**
 * `braid/testing`: workflow tests from TypeScript (vitest, jest), on the same engine as `braid test`: the real
 * runtime on an in-process embedded database with a virtual clock, with real handler functions or mocks.
 *
 *   const t = await testWorkflow({ definitions: 'definitions', workflow: 'user_onboarding', inputs: { user_id: 'u1' }, handlers });
 *   await t.advance('1d');
 *   await t.signal('email_verified', { user_id: 'u1' });
 *   await t.runToEnd();
 *   await t.expect({ state: 'completed', tasks: { send_reminder: 'skipped' } });
 */
import { parseDuration } from '../compiler/duration.js';
import type { KindsConfig } from '../compiler/validate.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TaskRecord, WorkflowRecord } from '../runtime/sql/workflows.js';
import type { Handlers } from '../runtime/worker/handlers.js';
import { compare, type Mismatch } from './expect.js';
import { Driver, observe } from './run-test.js';
import { TestSession } from './session.js';
import { DEFAULT_MAX_TIME_MS, DEFAULT_NOW, type Expect, type Mock } from './test-file.js';
import type { VirtualClock } from './virtual-clock.js';

export type { Mismatch } from './expect.js';
export type { Expect, Mock } from './test-file.js';

/** A mock as a test file writes it (`delay` a duration). */
export interface MockSpec {
  output?: unknown;
  error?: string;
  fail?: number;
  delay?: string;
  handler?: 'real';
}

export interface TestWorkflowOptions {
  /** Definition files and folders (test files among them are skipped). */
  definitions: string | readonly string[];
  workflow: string;
  inputs?: unknown;
  /** Real handler functions, by kind: they run the tasks no mock covers. */
  handlers?: Handlers;
  /** By task name, `WORKFLOW.TASK`, or `kind:NAME`. */
  mocks?: Record<string, MockSpec>;
  /** The virtual start time (default 2026-01-01T00:00:00Z). */
  now?: Date | string;
  /** How far runToEnd() may take the clock past `now` (default 30d). */
  maxTime?: string;
  /** The project config's `kinds` (their output schemas), when the definitions rely on them. */
  kinds?: KindsConfig;
}

/** An expectation did not hold: the message lists each mismatch. */
export class WorkflowExpectationError extends Error {
  constructor(readonly mismatches: Mismatch[]) {
    super(
      `the workflow does not match:\n${mismatches
        .map((m) => `  ${m.path}: expected ${JSON.stringify(m.expected)}, got ${JSON.stringify(m.actual)}`)
        .join('\n')}`,
    );
    this.name = 'WorkflowExpectationError';
  }
}

export interface WorkflowTest {
  readonly id: string;
  readonly runtime: Runtime;
  /** The virtual time. */
  now(): Date;
  /** Emits a signal to the workflow, then runs everything it made runnable. */
  signal(key: string, payload?: unknown, options?: { idempotencyKey?: string; source?: unknown }): Promise<void>;
  /** Moves the virtual clock on (a duration like '1d', or ms), firing everything due on the way, in order. */
  advance(by: string | number): Promise<void>;
  /** Runs on with time skipping until the workflow is final or maxTime has passed; returns it. */
  runToEnd(): Promise<WorkflowRecord>;
  workflow(): Promise<WorkflowRecord>;
  task(name: string): Promise<TaskRecord>;
  tasks(): Promise<Record<string, TaskRecord>>;
  /** Checks an expectation (the test file's `expect` form) now; throws WorkflowExpectationError when it fails. */
  expect(expect: Expect): Promise<void>;
  /** Stops the runtime; the session (its database) stays open for the next test. */
  close(): Promise<void>;
}

const sessions = new Map<string, Promise<TestSession>>();

/** One session per set of definitions and handlers in this process: migrated once, emptied per test. */
function sessionFor(options: TestWorkflowOptions): Promise<TestSession> {
  const definitions = typeof options.definitions === 'string' ? [options.definitions] : [...options.definitions];
  const key = JSON.stringify([definitions, options.kinds ?? {}]);
  let s = sessions.get(key);
  if (!s) sessions.set(key, (s = TestSession.open({ definitions, kinds: options.kinds })));
  return s;
}

/** Closes every session this process opened (an afterAll hook). */
export async function closeTestSessions(): Promise<void> {
  const all = [...sessions.values()];
  sessions.clear();
  for (const s of all) await (await s).close();
}

function toMock(m: MockSpec): Mock {
  const { delay, ...rest } = m;
  if (delay === undefined) return rest;
  const ms = parseDuration(delay);
  if (ms === undefined) throw new RangeError(`mock delay: not a duration: ${delay}`);
  return { ...rest, delay_ms: ms };
}

/** Starts the workflow on the test engine and runs it until nothing can run at the start time. */
export async function testWorkflow(options: TestWorkflowOptions): Promise<WorkflowTest> {
  const session = await sessionFor(options);
  const now = new Date(options.now ?? DEFAULT_NOW);
  const maxTimeMs = options.maxTime === undefined ? DEFAULT_MAX_TIME_MS : parseDuration(options.maxTime);
  if (maxTimeMs === undefined) throw new RangeError(`maxTime: not a duration: ${options.maxTime}`);
  const mocks = Object.fromEntries(Object.entries(options.mocks ?? {}).map(([k, v]) => [k, toMock(v)]));
  const { rt, clock } = await session.runtime(options.workflow, mocks, now, options.handlers);
  const driver = new Driver(rt, clock, session);
  try {
    await rt.startWorker();
    const id = await rt.start(options.workflow, options.inputs ?? {}, { id: 'test-1' });
    await driver.settle();
    return handle(id, rt, clock, driver, now.getTime() + maxTimeMs);
  } catch (error) {
    await rt.stop(0);
    throw error;
  }
}

function handle(id: string, rt: Runtime, clock: VirtualClock, driver: Driver, end: number): WorkflowTest {
  const h = rt.workflow(id);
  return {
    id,
    runtime: rt,
    now: () => clock.now(),
    async signal(key, payload = null, options = {}) {
      await h.signals.emit(key, payload, options);
      await driver.settle();
    },
    async advance(by) {
      const ms = typeof by === 'number' ? by : parseDuration(by);
      if (ms === undefined || ms < 0) throw new RangeError(`advance: not a duration: ${String(by)}`);
      await driver.advanceTo(clock.now().getTime() + ms);
    },
    async runToEnd() {
      await driver.runToEnd(id, end);
      return h.load();
    },
    workflow: () => h.load(),
    task: (name) => h.task(name),
    tasks: async () => Object.fromEntries((await h.tasks()).map((t) => [t.name, t])),
    async expect(expect) {
      const mismatches = compare(expect, await observe(rt, id, clock));
      if (mismatches.length > 0) throw new WorkflowExpectationError(mismatches);
    },
    close: () => rt.stop(0),
  };
}
