import { type ActorOptions, actorOf, namedActor } from './core/actor.js';
import { advanceIn, clockNow, type RuntimeContext, workflowWrite } from './core/context.js';
import { type Database, type Queryable, redacting, type TxOption, txQueryable } from './db/types.js';
import type { RetryMode } from './engine/decide.js';
import type { RetryResult } from './engine/retry.js';
import type { UpgradeOutcome } from './engine/upgrade.js';
import { InvalidCursorError, TaskNotFoundError, WorkflowNotFoundError } from './errors.js';
import { flowReason } from './flow/reason.js';
import type { TaskActionOptions, TaskActionResult } from './incidents/task-actions.js';
import type { TaskAction } from './incidents/task-decide.js';
import { pendingReason, skipReason } from './reads/status.js';
import { readStream, type StreamReadOptions } from './reads/stream-reader.js';
import { loadTasks, loadTasksByName } from './reads/task-records.js';
import { lockWorkflows } from './sql/advance.js';
import { workflowAudit, writeAudit } from './sql/audit.js';
import { channels } from './sql/channels.js';
import { registeredNames } from './sql/definitions.js';
import { flowHoldings } from './sql/flow.js';
import { workflowPauses } from './sql/pauses.js';
import type { SignalPage } from './sql/signals.js';
import { taskStreams } from './sql/streams.js';
import { KEY_WAIT_PREFIX, listLogLines } from './sql/task-logs.js';
import { upgradeHistory, versionAndCurrent } from './sql/upgrade.js';
import { liveKeys } from './sql/workers.js';
import {
  liveKinds,
  loadWorkflow,
  readOneSnapshot,
  type TaskRecord,
  type WorkflowRecord,
  watchWorkflow,
  workflowState,
  workflowVersionRef,
} from './sql/workflows.js';
import type { SignalRow } from './waits/decide.js';
import type { WaitDiagnostics } from './waits/diagnostics.js';
import { type EmitOptions, type EmitResult, type ListOptions, listTaskSignals, listWorkflowSignals, type TaskScopedOptions } from './waits/signals.js';
import { DEFAULT_RETRY_MODE, type LogPage, pauseText, type StreamChunk, type WorkflowStatus } from './wire/index.js';
import type { ExtensionSpec } from './worker/handlers.js';

/** How long marking a workflow watched waits for its row (a completion holds it briefly). */
const WATCH_LOCK_MS = 2000;

/** What a handle reads and writes through: the runtime that made it (declared here, so the two modules need not import each other). */
export interface HandleHost {
  readonly db: Database;
  readonly schema: string;
  readonly ctx: RuntimeContext;
  readonly internals: RuntimeContext & { workerDeadAfterMs: number };
}

export class WorkflowHandle {
  constructor(
    private readonly rt: HandleHost,
    readonly id: string,
  ) {}

  /** What this workflow's audit lines name. */
  private get line(): { target: string; workflow_id: string } {
    return { target: this.id, workflow_id: this.id };
  }

  private get q(): Queryable {
    return this.rt.db;
  }

  /** The workflow's row; with `redact`, its sealed sensitive values read `[redacted]` (to show it). */
  async load(options: TxOption & { redact?: boolean } = {}): Promise<WorkflowRecord> {
    const q = options.tx ? txQueryable(options.tx) : this.q;
    const w = await loadWorkflow(options.redact ? redacting(q) : q, this.rt.ctx.s, this.id);
    if (!w) throw new WorkflowNotFoundError(this.id);
    return w;
  }

  /** All tasks, paged (insertion order). */
  tasks(page: { limit?: number; offset?: number; tx?: Queryable } = {}): Promise<TaskRecord[]> {
    return loadTasks(page.tx ?? this.q, this.rt.ctx.s, this.id, page);
  }

  /**
   * A task's output stream `name`, chunk by chunk in order (across attempts, from the current attempt's start or
   * `after`); with `follow`, until the task has ended.
   */
  stream(task: string, name: string, options: StreamReadOptions = {}): AsyncGenerator<StreamChunk> {
    return readStream(this.q, this.rt.ctx.s, { workflowId: this.id, task, name }, options);
  }

  /** The task's streams that have chunks, each with its latest attempt and that attempt's chunk count. */
  streams(task: string): Promise<{ name: string; attempt: number; chunks: number }[]> {
    return taskStreams(this.q, this.rt.ctx.s, this.id, task);
  }

  async task(name: string, options: TxOption = {}): Promise<TaskRecord> {
    const [t] = await loadTasksByName(options.tx ? txQueryable(options.tx) : this.q, this.rt.ctx.s, this.id, [name]);
    if (!t) throw new TaskNotFoundError(this.id, name);
    return t;
  }

  async output(name: string, options: TxOption = {}): Promise<unknown> {
    return (await this.task(name, options)).output;
  }

  /** A task's direct deps, or with `recursive` every task upstream of it. */
  async deps(name: string, options: TxOption & { recursive?: boolean } = {}): Promise<Record<string, TaskRecord>> {
    const q = options.tx ? txQueryable(options.tx) : this.q;
    const found = new Map<string, TaskRecord>();
    let frontier = (await this.task(name, options)).deps;
    while (frontier.length > 0) {
      const rows = await loadTasksByName(q, this.rt.ctx.s, this.id, frontier);
      for (const r of rows) found.set(r.name, r);
      frontier = options.recursive ? [...new Set(rows.flatMap((r) => r.deps))].filter((n) => !found.has(n)) : [];
    }
    return Object.fromEntries(found);
  }

  /** Cancels every task not yet final; running handlers are asked to stop. */
  async cancel(options: TxOption & ActorOptions = {}): Promise<{ cancelled: string[]; stopping: string[] }> {
    const { cancelWorkflow } = await import('./engine/cancel.js');
    const who = actorOf(options);
    const result = await workflowWrite(this.rt.ctx, options, this.id, async (tx, ctx) => {
      const r = await cancelWorkflow(tx, ctx, this.id);
      const detail = { cancelled: r.cancelled, stopping: r.stopping };
      if (r.cancelled.length + r.stopping.length > 0) await writeAudit(tx, ctx.s, ctx.now, [{ action: 'workflow.cancel', ...this.line, ...who, detail }]);
      return r;
    });
    if (!result.found) throw new WorkflowNotFoundError(this.id);
    return { cancelled: result.cancelled, stopping: result.stopping };
  }

  /**
   * An operator's action on one task, audited with `actor` and `reason` (braid task): `retry` opens a task that
   * ended without completing again (with what it ended downstream; a final workflow starts a new attempt), or
   * runs one waiting out its backoff now; `skip` ends an open task as skipped (its dependents apply their ignore
   * rules); `complete` stores `output` (checked against `returns`) and its dependents run. A running task only
   * with `force`, which cancels its attempt first. A TaskStateConflictError when the task's state allows none.
   */
  async taskAction(task: string, action: TaskAction, options: TaskActionOptions & { output?: unknown } = {}): Promise<TaskActionResult> {
    const { taskAction } = await import('./incidents/task-actions.js');
    return taskAction(this.rt.ctx, this.id, task, action, options);
  }

  /**
   * Deletes task rows: their dependents see a deleted dep (failed unless they ignore deleted deps).
   * Retention's per-task mode does this to finalized tasks; use it by hand only to unstick a workflow.
   */
  async deleteTasks(names: readonly string[], options: TxOption & ActorOptions = {}): Promise<void> {
    const { deleteTasks } = await import('./engine/advance.js');
    const who = actorOf(options);
    await workflowWrite(this.rt.ctx, options, this.id, async (tx, ctx) => {
      await lockWorkflows(tx, ctx.s, [this.id]);
      await deleteTasks(tx, ctx, this.id, names);
      await writeAudit(tx, ctx.s, ctx.now, [{ action: 'task.delete', ...this.line, ...who, detail: { tasks: names } }]);
    });
  }

  /**
   * Starts a new attempt of a finalized workflow: mode failed_and_downstream (default), failed_only, or all;
   * resetHistory clears the retried tasks' attempts and errors (max_attempts stays). Returns the new attempt and
   * the tasks that run again (none, and the same attempt, when the mode selects nothing).
   */
  async retry(options: TxOption & ActorOptions & { mode?: RetryMode; resetHistory?: boolean; onCurrent?: boolean } = {}): Promise<RetryResult> {
    const [{ retryOnCurrent }, { retryWorkflow }] = await Promise.all([import('./deploys/upgrades.js'), import('./engine/retry.js')]);
    const who = actorOf(options);
    const result = await workflowWrite(this.rt.ctx, options, this.id, async (tx, ctx) => {
      const how = { mode: options.mode ?? DEFAULT_RETRY_MODE, resetHistory: options.resetHistory ?? false };
      const retried = options.onCurrent ? await retryOnCurrent(tx, ctx, this.id, how) : await retryWorkflow(tx, ctx, this.id, how);
      if (retried && retried.retried.length > 0) {
        const detail = {
          mode: how.mode,
          reset_history: how.resetHistory,
          on_current: options.onCurrent === true,
          attempt: retried.attempt,
          tasks: retried.retried,
        };
        await writeAudit(tx, ctx.s, ctx.now, [{ action: 'workflow.retry', ...this.line, ...who, detail }]);
      }
      return retried && { ...retried, ...(await versionAndCurrent(tx, ctx.s, this.id)) };
    });
    if (!result) throw new WorkflowNotFoundError(this.id);
    return result;
  }

  /**
   * Moves this running workflow to another version (default: its name's current one) in one transaction (or
   * the caller's) under its lock, or leaves it as it is and says why (`skipped`, with the reason).
   */
  async upgrade(options: TxOption & ActorOptions & { to?: string; dryRun?: boolean } = {}): Promise<UpgradeOutcome> {
    const [{ resolveVersion }, { upgradeWorkflow }] = await Promise.all([import('./deploys/upgrades.js'), import('./engine/upgrade.js')]);
    return workflowWrite(this.rt.ctx, options, this.id, async (tx, ctx) => {
      const w = await workflowVersionRef(tx, ctx.s, this.id);
      if (!w) throw new WorkflowNotFoundError(this.id);
      const target = await resolveVersion(tx, ctx.s, w.name, options.to);
      return upgradeWorkflow(tx, ctx, this.id, target, { dryRun: options.dryRun, who: actorOf(options) });
    });
  }

  /**
   * Adds tasks to this running workflow (a `tasks:` map in the definition language; deps may name existing
   * tasks), checked by the compiler's passes, in one transaction (or the caller's) under the workflow's lock.
   * A name already taken is an ExtensionError. Returns the new tasks' names.
   */
  async extend(spec: ExtensionSpec, options: TxOption = {}): Promise<string[]> {
    const { extendWorkflow } = await import('./engine/extend.js');
    const known = await registeredNames(this.rt.db, this.rt.ctx.s);
    return workflowWrite(this.rt.ctx, options, this.id, (tx, ctx) => extendWorkflow(tx, ctx, this.id, spec, known));
  }

  /**
   * The workflow's task logs in the order they were stored: its handlers' ctx.log lines and braid's lines
   * about attempts; of one task (and attempt) when given, after `after` (a line's id: to follow, pass the
   * page's next_after), at most `limit` (default 500, at most 5,000).
   */
  async logs(options: { task?: string; attempt?: number; after?: string; limit?: number } = {}): Promise<LogPage> {
    const limit = options.limit ?? 500;
    if (!Number.isInteger(limit) || limit < 1 || limit > 5000) throw new RangeError('limit is a whole number from 1 to 5000');
    if (options.attempt !== undefined && (!Number.isInteger(options.attempt) || options.attempt < 1)) throw new RangeError('attempt is a whole number from 1');
    if (options.after !== undefined && !/^[0-9]{1,19}$/.test(options.after)) throw new InvalidCursorError();
    const page = await listLogLines(this.q, this.rt.ctx.s, { workflowId: this.id, ...options, limit });
    if (page.lines.length === 0 && options.after === undefined) {
      // nothing logged, or nothing there: say which
      if (!(await loadWorkflow(this.q, this.rt.ctx.s, this.id))) throw new WorkflowNotFoundError(this.id);
      if (options.task !== undefined && (await this.tasks()).every((t) => t.name !== options.task)) throw new TaskNotFoundError(this.id, options.task);
    }
    return page;
  }

  /** Emit and read this workflow's signals. */
  get signals(): WorkflowSignals {
    return new WorkflowSignals(this.rt, this.id);
  }

  /** A task's wait evaluated now, without writing (phase, each term's value, errors, inputs, truncation). */
  async waitDiagnostics(task: string, options: { signalScanLimit?: number } = {}): Promise<WaitDiagnostics> {
    const { DiagnosticsError, waitDiagnostics } = await import('./waits/diagnostics.js');
    // a task held back by flow control, a pause or a debounce has no wait to evaluate: what holds it back is said
    // instead, as status says it
    const t = (await this.tasks()).find((x) => x.name === task);
    if (t && !t.wait && (t.state === 'available' || t.state === 'scheduled')) {
      const why = (await this.status()).tasks.find((x) => x.name === task)?.pending_reason;
      if ((t.state === 'available' && (t.flow !== null || why?.startsWith('paused ('))) || why?.startsWith('debounced ') || why?.startsWith(KEY_WAIT_PREFIX))
        throw new DiagnosticsError(`task "${task}" has no wait: it is ${t.state} and not started yet: ${why}`);
    }
    const d = await waitDiagnostics(this.q, await advanceIn(this.rt.ctx), this.id, task, options);
    if (!d) throw (await loadWorkflow(this.q, this.rt.ctx.s, this.id)) ? new TaskNotFoundError(this.id, task) : new WorkflowNotFoundError(this.id);
    return d;
  }

  /**
   * The workflow with its tasks, each pending one with why it waits: its sealed sensitive values `[redacted]`,
   * unless `reveal` (an admin's), which writes an audit line as `actor`.
   */
  async status(options: ActorOptions & { reveal?: boolean } = {}): Promise<WorkflowStatus> {
    const { s, workerDeadAfterMs } = this.rt.internals;
    const now = await clockNow(this.rt.ctx);
    if (options.reveal) await this.revealed(options);
    // one snapshot, so a task shown ended never sits beside its workflow shown running
    const { workflow, tasks, kinds, upgrades, held, pauses, audit, keyHolders } = await this.rt.db.transaction(async (tx) => {
      const q = options.reveal ? tx : redacting(tx);
      await readOneSnapshot(q);
      const workflow = await this.load({ tx: q });
      const tasks = await this.tasks({ tx: q });
      const flows = tasks.filter((t) => t.state === 'available' && t.flow !== null).map((t) => t.flow!);
      return {
        workflow,
        tasks,
        kinds: await liveKinds(q, s, workerDeadAfterMs, now),
        upgrades: await upgradeHistory(q, s, this.id),
        held: flows.length > 0 ? await flowHoldings(q, s, flows) : undefined,
        pauses: await workflowPauses(q, s, this.id),
        audit: await workflowAudit(q, s, this.id),
        // which data keys the live workers of each kind have: a task that needs another waits for one that has it
        keyHolders: tasks.some((t) => t.needs_keys) ? await liveKeys(q, s, new Date(now.getTime() - workerDeadAfterMs)) : undefined,
      };
    });
    const byName = new Map(tasks.map((t) => [t.name, t]));
    const debounced = workflow.debounce_until !== null && new Date(workflow.debounce_until) > now ? new Date(workflow.debounce_until) : null;
    const flowWhy = (t: TaskRecord) => {
      const pause =
        t.state === 'available' ? pauses.find((p) => (p.scope === 'queue' ? t.queue : p.scope === 'kind' ? t.kind : workflow.name) === p.target) : undefined;
      if (pause) return pauseText(pause);
      if (debounced && t.state === 'scheduled' && new Date(t.scheduled_at).getTime() === debounced.getTime())
        return `debounced until ${debounced.toISOString()} (a start with the same key before then replaces this run's inputs)`;
      const lacking = keyHolders && (t.state === 'available' || t.state === 'scheduled') ? keysNoWorkerHas(t, keyHolders) : [];
      if (lacking.length > 0) return `${KEY_WAIT_PREFIX} ${lacking.join(', ')}: no live worker of kind ${t.kind} has it (config keys:, or BRAID_KEYS)`;
      return held && t.state === 'available' && t.flow ? flowReason(t.flow, this.id, held, now) : null;
    };
    return {
      workflow,
      tasks: tasks.map((t) => ({ ...t, pending_reason: pendingReason(t, byName, kinds, flowWhy(t)), skip_reason: skipReason(t, byName) })),
      upgrades,
      pauses,
      audit,
    };
  }

  /** A reveal's audit line: who saw the workflow's sensitive values in clear, and why. */
  private async revealed(o: ActorOptions): Promise<void> {
    const who = actorOf(o);
    await workflowWrite(this.rt.ctx, undefined, this.id, async (tx, ctx) => {
      if (!(await loadWorkflow(tx, ctx.s, this.id))) throw new WorkflowNotFoundError(this.id);
      await writeAudit(tx, ctx.s, ctx.now, [{ action: 'reveal', ...this.line, ...who }]);
    });
  }

  /** Resolves when the workflow is final (checks on every finalize notification, and polls as a fallback). */
  async waitUntilFinal(options: { timeoutMs?: number; pollMs?: number } = {}): Promise<WorkflowRecord> {
    const deadline = Date.now() + (options.timeoutMs ?? 24 * 3_600_000);
    let wake: () => void = () => undefined;
    const unlisten = await this.rt.db.listen(channels(this.rt.schema).workflow, (payload) => {
      if (payload.startsWith(`${this.id} `)) wake();
    });
    // after listening, before reading the state: an end that commits later is announced (a lock wait past its
    // bound leaves the poll to see the end)
    await this.rt.db.transaction((tx) => watchWorkflow(tx, this.rt.ctx.s, this.id), { lockTimeoutMs: WATCH_LOCK_MS }).catch(() => undefined);
    try {
      for (;;) {
        const state = await workflowState(this.q, this.rt.ctx.s, this.id);
        if (state === undefined) throw new WorkflowNotFoundError(this.id);
        if (state !== 'running') return this.load();
        if (Date.now() > deadline) throw new Error(`workflow ${this.id} is still running after ${options.timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, options.pollMs ?? 1000).unref();
        });
      }
    } finally {
      await unlisten();
    }
  }
}

/** A workflow's signals: emit (with the run-in-my-transaction form) and the workflow-wide and task-scoped reads. */
export class WorkflowSignals {
  constructor(
    private readonly rt: HandleHost,
    readonly workflowId: string,
  ) {}

  /**
   * Persists a signal and evaluates the waits that declare its key, in one transaction (or the caller's).
   * Throws SignalPayloadMismatchError when an idempotency key is replayed with another payload, and
   * SignalAttemptMismatchError when `attempt` is not the workflow's current attempt.
   */
  async emit(key: string, payload: unknown, options: EmitOptions & TxOption & ActorOptions = {}): Promise<EmitResult> {
    const { emitSignal } = await import('./engine/signal.js');
    const who = namedActor(options);
    const result = await workflowWrite(this.rt.ctx, options, this.workflowId, async (tx, ctx) => {
      const r = await emitSignal(tx, ctx, this.workflowId, key, payload, options);
      const line = { action: 'signal', target: this.workflowId, workflow_id: this.workflowId, ...who!, detail: { key, signal: r?.signal.id } };
      if (r && who && !r.replayed) await writeAudit(tx, ctx.s, ctx.now, [line]);
      return r;
    });
    if (!result) throw new WorkflowNotFoundError(this.workflowId);
    return result;
  }

  /** Every signal of the workflow in id order, paged by cursor (audit views). */
  async list(options: ListOptions & TxOption = {}): Promise<SignalPage> {
    const q = options.tx ? txQueryable(options.tx) : this.rt.db;
    if (!(await loadWorkflow(q, this.rt.ctx.s, this.workflowId))) throw new WorkflowNotFoundError(this.workflowId);
    return listWorkflowSignals(options.redact ? redacting(q) : q, this.rt.ctx.s, this.workflowId, options);
  }

  /** The latest signal of a key the task's wait declares, up to its evidence boundary once resolved. */
  async latestForTask(task: string, key: string, options: TaskScopedOptions & TxOption = {}): Promise<SignalRow | null> {
    const page = await this.taskPage(task, { ...options, key, limit: 1, newestFirst: true });
    return page.signals[0] ?? null;
  }

  /** Signals of the keys the task's wait declares (or one of them), oldest first, paged. */
  listForTask(task: string, options: TaskScopedOptions & TxOption & { key?: string; cursorId?: string; limit?: number } = {}): Promise<SignalPage> {
    return this.taskPage(task, options);
  }

  private async taskPage(
    task: string,
    options: TaskScopedOptions & TxOption & { key?: string; cursorId?: string; limit?: number; newestFirst?: boolean },
  ): Promise<SignalPage> {
    const q = options.tx ? txQueryable(options.tx) : this.rt.db;
    const page = await listTaskSignals(options.redact ? redacting(q) : q, this.rt.ctx.s, this.workflowId, task, options);
    if (!page)
      throw (await loadWorkflow(q, this.rt.ctx.s, this.workflowId)) ? new TaskNotFoundError(this.workflowId, task) : new WorkflowNotFoundError(this.workflowId);
    return page;
  }
}

/** The keys a task needs that no live worker of its kind has. */
function keysNoWorkerHas(t: TaskRecord, holders: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  return (t.needs_keys ?? []).filter((k) => !holders.get(t.kind)?.has(k));
}
