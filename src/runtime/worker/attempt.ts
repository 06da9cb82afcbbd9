import type { PlanTask } from '../../compiler/plan.js';
import { advanceAt, advanceIn, clockNow, type RuntimeContext } from '../core/context.js';
import { Secrets } from '../core/privacy.js';
import { secretsIn } from '../db/sealing.js';
import { type Queryable, unbounded } from '../db/types.js';
import { completeAttempt } from '../engine/completion.js';
import { compileFor } from '../engine/extend.js';
import { withUrls } from '../outside/callback-ops.js';
import { callbackLinks } from '../outside/callbacks.js';
import { loadTasksByName } from '../reads/task-records.js';
import { lockWorkflows } from '../sql/advance.js';
import { type AttemptRef, attemptRunning } from '../sql/attempts.js';
import { registeredNames } from '../sql/definitions.js';
import type { FetchedTask } from '../sql/fetch.js';
import type { SignalPage } from '../sql/signals.js';
import type { TaskRecord } from '../sql/workflows.js';
import { NOOP_SPAN, type OpenSpan } from '../telemetry/tracing.js';
import type { SignalRow } from '../waits/decide.js';
import { workflowResults } from '../waits/gather.js';
import { listTaskSignals } from '../waits/signals.js';
import type { CallbackLinkUrl } from '../wire/index.js';
import type { Handler, TaskContext, TaskSpan, TaskWait } from './handlers.js';
import type { StoredOutput } from './output-rules.js';
import { FencedAbort, NonRetryableError, ShutdownAbort, TaskCancelled, TaskFailed, TaskSnoozed, TaskTimeout } from './task-errors.js';
import { AttemptLog, DEFAULT_LOG_BOUNDS, type LogWriter, type TaskLogger } from './task-log.js';
import { AttemptStreams, type StreamWriter } from './task-stream.js';

/** What an attempt needs of its worker to serve the handler's context. */
export type AttemptEnv = RuntimeContext;

/**
 * One claimed attempt while its handler runs. The AbortController is made only when the handler asks for
 * ctx.signal (most never do, and each costs more than the rest of a no-op attempt). A timeout or a shutdown
 * settles the attempt at once, even when the handler ignores the abort; a cancelled workflow only aborts.
 */
export class Attempt {
  readonly ref: AttemptRef;
  /** The handler's transaction, once it opened one with ctx.transaction(). */
  tx?: AttemptTransaction;
  /** Tasks ctx.extend() added, inserted with the completion. */
  readonly extensions: PlanTask[][] = [];
  private controller?: AbortController;
  private reason?: unknown;
  private reject?: (reason: unknown) => void;
  private timer?: NodeJS.Timeout;
  /** The handler's own promise while it has not settled (it may outlive the attempt: a timeout, a shutdown). */
  private pending?: Promise<unknown>;
  /** When the handler was called (ms). */
  startedAt = 0;
  /** What satisfied the task's wait (ctx.wait), loaded before the handler runs; null without a wait. */
  wait: TaskWait | null = null;
  /** The handler's log (ctx.log), opened when it first asks for it. */
  log?: AttemptLog;
  /** The attempt's span, when a tracer provider records. */
  span: OpenSpan | null = null;
  /** Its output streams (ctx.stream), opened when the handler first asks for one. */
  streams?: AttemptStreams;

  constructor(
    readonly task: FetchedTask,
    workerId: string,
  ) {
    this.ref = attemptRef(task, workerId);
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason !== undefined) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.reason === undefined) {
      this.reason = reason;
      this.controller?.abort(reason);
    }
    if (reason instanceof TaskTimeout || reason instanceof ShutdownAbort || reason instanceof FencedAbort) this.reject?.(reason);
  }

  /** The handler's output; rejects with what it threw, or at the timeout or shutdown. */
  run(handler: Handler, ctx: TaskContext): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.reject = reject;
      this.startedAt = Date.now();
      const ms = this.task.timeout_ms;
      if (ms !== null) this.timer = setTimeout(() => this.abort(new TaskTimeout(ms)), ms);
      try {
        const result = handler(this.task.args, ctx) as { then?: unknown } | undefined;
        if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
          const running = Promise.resolve(result as PromiseLike<unknown>);
          this.pending = running;
          running.then(
            (value) => {
              this.pending = undefined;
              resolve(value);
            },
            (error: unknown) => {
              this.pending = undefined;
              reject(error);
            },
          );
        } else resolve(result);
      } catch (error) {
        reject(error);
      }
    });
  }

  /**
   * The handler's promise when it still runs though its attempt ended (a timeout, a shutdown, a lost
   * database), with why the attempt ended; undefined otherwise.
   */
  get outlived(): { running: Promise<unknown>; why: Error } | undefined {
    const why = this.reason;
    if (!this.pending || !(why instanceof TaskTimeout || why instanceof ShutdownAbort || why instanceof FencedAbort)) return undefined;
    return { running: this.pending, why };
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.reject = undefined;
  }

  /**
   * The attempt's sensitive values in clear (its args', its deps' outputs', its wait's payloads', and `more`):
   * what nothing it stores or prints may hold.
   */
  secrets(more?: ReadonlySet<string>): Secrets {
    // the claim marks each task with what its row opened (args, deps' outputs); rendered args mark themselves: a
    // task without either (nearly all) costs two look-ups and no allocation
    if (!this.wait && !more && !secretsIn(this.task) && !secretsIn(this.task.args)) return Secrets.none;
    const rows = this.wait ? Object.values(this.wait.terms).flatMap((t) => (t.kind === 'signal' ? t.signals : [])) : [];
    return Secrets.of(this.task, this.task.args, this.task.dep_outputs, ...rows, ...rows.map((r) => r.payload), more);
  }
}

/** What identifies a claimed attempt in the database. */
export function attemptRef(task: FetchedTask, workerId: string): AttemptRef {
  return { workflowId: task.workflow_id, name: task.name, attempt: task.attempt, workerId };
}

/** The handler's `ctx`: one object per attempt whose methods live on the prototype. */
export class AttemptContext implements TaskContext {
  readonly workflowId: string;
  readonly taskName: string;
  readonly kind: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly deps: Record<string, unknown>;
  readonly wait: TaskWait | null;
  readonly signals: TaskContext['signals'];

  constructor(
    private readonly env: AttemptEnv,
    private readonly current: Attempt,
    private readonly logs?: LogWriter,
  ) {
    const t = current.task;
    this.workflowId = t.workflow_id;
    this.taskName = t.name;
    this.kind = t.kind;
    this.attempt = t.attempt;
    this.maxAttempts = t.max_attempts;
    this.deps = {};
    for (const d of t.deps) this.deps[d] = t.dep_outputs?.[d] ?? null;
    this.wait = current.wait;
    this.signals = new TaskSignals(env, t);
  }

  get signal(): AbortSignal {
    return this.current.signal;
  }

  get deadline(): Date | null {
    const ms = this.current.task.timeout_ms;
    return ms === null ? null : new Date(this.current.startedAt + ms);
  }

  get span(): TaskSpan {
    return (this.current.span?.span as TaskSpan | undefined) ?? NOOP_SPAN;
  }

  get log(): TaskLogger {
    if (!this.current.log) {
      const t = this.current.task;
      const task = { workflow_id: t.workflow_id, name: t.name, attempt: t.attempt, worker: this.current.ref.workerId };
      // without a writer (a context made outside a worker) the lines are kept nowhere
      const secrets = this.current.secrets();
      this.current.log = this.logs ? this.logs.open(task, secrets) : new AttemptLog(task, DEFAULT_LOG_BOUNDS, () => undefined, undefined, secrets);
    }
    return this.current.log;
  }

  loadDeps(options: { recursive?: boolean } = {}): Promise<Record<string, TaskRecord>> {
    const t = this.current.task;
    return loadDeps(this.env.db, this.env.s, t.workflow_id, t.deps, options.recursive ?? false);
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (this.current.tx) return Promise.reject(new Error('ctx.transaction() can be used once per attempt'));
    this.current.tx = new AttemptTransaction(this.env, this.current.ref);
    return this.current.tx.open(fn);
  }

  workflowResults(term: string): Promise<{ id: string; state: string | null; output: unknown }[]> {
    return workflowResults(this.env.db, this.env.s, this.workflowId, this.taskName, term);
  }

  stream(name: string): StreamWriter {
    this.current.streams ??= new AttemptStreams(this.env, this.current.task, this.current.secrets());
    return this.current.streams.stream(name);
  }

  async callbacks(task: string, term: string): Promise<CallbackLinkUrl[]> {
    // inside the attempt's own transaction once it is open (the embedded database runs one at a time)
    const q = this.current.tx?.queryable ?? this.env.db;
    return withUrls(await callbackLinks(q, this.env.s, this.env.keys, this.workflowId, task, term), this.env.publicUrl);
  }

  async extend(spec: Parameters<TaskContext['extend']>[0]): Promise<string[]> {
    const { db, s } = this.env;
    // inside the attempt's own transaction once it is open (the embedded database runs one at a time)
    const q = this.current.tx?.queryable ?? db;
    const ctx = await advanceIn(this.env, q);
    const tasks = await compileFor(q, ctx, this.workflowId, spec, await registeredNames(q, s));
    this.current.extensions.push(tasks);
    return tasks.map((t) => t.name);
  }

  cancel(reason?: string): never {
    throw new TaskCancelled(reason);
  }

  snooze(ms: number): never {
    throw new TaskSnoozed(ms);
  }

  fail(message: string, options: { retry?: boolean; code?: string } = {}): never {
    if (options.retry === false) throw new NonRetryableError(String(message), { code: options.code });
    throw new TaskFailed(String(message), options.code);
  }
}

class TaskSignals {
  constructor(
    private readonly env: AttemptEnv,
    private readonly task: FetchedTask,
  ) {}

  async latest(key: string, options: Parameters<TaskContext['signals']['latest']>[1] = {}): Promise<SignalRow | null> {
    const page = await listTaskSignals(this.env.db, this.env.s, this.task.workflow_id, this.task.name, { ...options, key, limit: 1, newestFirst: true });
    return page?.signals[0] ?? null;
  }

  async list(options: Parameters<TaskContext['signals']['list']>[0] = {}): Promise<SignalPage> {
    return (
      (await listTaskSignals(this.env.db, this.env.s, this.task.workflow_id, this.task.name, options)) ?? { signals: [], next_cursor_id: null, has_more: false }
    );
  }
}

/** The transaction a handler opened with ctx.transaction(): held open until the attempt ends, then committed with the completion. */
export class AttemptTransaction {
  private settle?: (outcome: { output: StoredOutput; extensions: PlanTask[][] } | undefined) => void;
  private done?: Promise<unknown>;
  /** The open transaction, while it is open: the handler's other database reads go through it. */
  queryable?: Queryable;

  constructor(
    private readonly env: AttemptEnv,
    private readonly ref: AttemptRef,
  ) {}

  open<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const { db, s } = this.env;
    return new Promise<T>((resolveResult, rejectResult) => {
      const ended = new Promise<{ output: StoredOutput; extensions: PlanTask[][] } | undefined>((r) => (this.settle = r));
      this.done = db.transaction(async (tx) => {
        this.queryable = tx;
        const now = await clockNow(this.env, tx);
        await lockWorkflows(tx, s, [this.ref.workflowId]);
        if (!(await attemptRunning(tx, s, this.ref))) {
          const error = new Error('this attempt is no longer running (timed out, cancelled or rescued)');
          rejectResult(error);
          throw error;
        }
        try {
          // the handler's own SQL runs as long as it needs: braid's statement deadline is for braid's statements
          resolveResult(await fn(unbounded(tx)));
        } catch (error) {
          rejectResult(error);
          throw error;
        }
        const outcome = await ended;
        if (!outcome) throw new RollbackSignal();
        if (!(await completeAttempt(tx, advanceAt(this.env, now), this.ref, outcome.output, outcome.extensions)))
          throw new Error('this attempt is no longer running');
      });
      this.done.catch(() => undefined);
    });
  }

  async commit(output: StoredOutput, extensions: PlanTask[][]): Promise<void> {
    this.settle!({ output, extensions });
    try {
      await this.done;
    } finally {
      this.queryable = undefined;
    }
  }

  async rollback(): Promise<void> {
    this.settle?.(undefined);
    await this.done?.catch(() => undefined);
    this.queryable = undefined;
  }
}

class RollbackSignal extends Error {
  override name = 'RollbackSignal';
}

async function loadDeps(db: Queryable, s: string, workflowId: string, direct: string[], recursive: boolean): Promise<Record<string, TaskRecord>> {
  const found = new Map<string, TaskRecord>();
  let frontier = direct;
  while (frontier.length > 0) {
    const rows = await loadTasksByName(
      db,
      s,
      workflowId,
      frontier.filter((n) => !found.has(n)),
    );
    for (const r of rows) found.set(r.name, r);
    frontier = recursive ? [...new Set(rows.flatMap((r) => r.deps))].filter((n) => !found.has(n)) : [];
  }
  return Object.fromEntries(found);
}
