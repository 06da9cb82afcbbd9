import type pg from 'pg';
import { compile, type CompileLimits, type CompileOptions } from '../compiler/instantiate.js';
import { createPostgres } from './db/postgres.js';
import type { Plan } from '../compiler/plan.js';
import { readSources } from '../compiler/load.js';
import { validate, type ValidationResult } from '../compiler/validate.js';
import { inTransaction, txQueryable, type Database, type Queryable, type TxOption } from './db/types.js';
import { DefinitionCache } from './definition-cache.js';
import type { Handlers } from './handlers.js';
import { LeaderService } from './leader.js';
import { rateLimitedWarnings, silentLogger, type Logger } from './log.js';
import { migrate } from './migrate.js';
import { channels } from './sql/channels.js';
import { lockWorkflows, notifyQueues, type AdvanceContext } from './sql/advance.js';
import { deleteTasks } from './waits.js';
import { currentDefinition, currentDefinitions, currentHashes, definitionByHash, listDefinitionVersions, registeredNames, registerVersion, runningPerVersion, type DefinitionVersion, type StoredDefinition } from './sql/definitions.js';
import { insertPlan } from './insert.js';
import type { InsertExtras } from './sql/insert.js';
import type { RetentionPolicy } from './sql/maintenance.js';
import { quoteIdent } from './sql/schema.js';
import { currentTime, type Clock } from './sql/time.js';
import { cancelWorkflow } from './cancel.js';
import { loadTasks, loadTasksByName } from './task-records.js';
import { listWorkflows, liveKinds, loadWorkflow, workflowState, type TaskRecord, type WorkflowListFilter, type WorkflowRecord, type WorkflowSummary } from './sql/workflows.js';
import { pendingReason } from './status.js';
import { Worker, workerId } from './worker.js';
import { waitDiagnostics, type WaitDiagnostics } from './diagnostics.js';
import { TaskNotFoundError } from './errors.js';
import { assertStorable } from './storable.js';
import { retryWorkflow, type RetryResult } from './retry.js';
import { extendWorkflow, type ExtensionSpec } from './extend.js';
import type { RetryMode } from './decide.js';
import { emitSignal, listTaskSignals, listWorkflowSignals, type EmitOptions, type EmitResult, type ListOptions, type TaskScopedOptions } from './signals.js';
import type { SignalPage } from './sql/signals.js';
import type { SignalRow } from './wait-eval.js';

export interface RuntimeOptions {
  /**
   * The database: an adapter (createPostgres, createPglite), the application's own `pg.Pool` (braid runs its
   * queries and transactions there and never ends it), or a Postgres connection string. The runtime closes
   * what it opened itself (`close()`).
   */
  database: Database | pg.Pool | string;
  /** The Postgres schema of braid's tables (default `braid`). */
  schema?: string;
  /** Handlers by kind; a runtime without handlers only inserts and reads. */
  handlers?: Handlers;
  /** Queue name -> concurrency (default { default: 10 }). */
  queues?: Record<string, number>;
  /**
   * Tasks per queue claimed ahead of free slots and held in this process until a slot frees (default 0).
   * Raises throughput for short handlers; a prefetched task waits for this process even when another is idle.
   */
  prefetch?: number;
  /** Replaces the database clock (tests). */
  clock?: () => Date;
  logger?: Logger;
  pollIntervalMs?: number;
  /** How often the leader looks for due wait timers (default 1 s); a nearer new timer wakes it sooner. */
  timerIntervalMs?: number;
  /** How often a worker records that it is alive (default 2 s). */
  heartbeatIntervalMs?: number;
  /**
   * A worker silent this long is dead and its running attempts run again elsewhere (default 7 s); an attempt a
   * live worker has failed to record the end of for this long is rescued the same way.
   */
  workerDeadAfterMs?: number;
  /** The longest a dead leader goes unreplaced (default 5 s): its lease, renewed five times per lease. */
  leaderLeaseMs?: number;
  /** Retention of finalized workflows (null keeps them; defaults 24 h each), and the opt-in per-task mode (taskMs). */
  retention?: Partial<RetentionPolicy>;
  retentionIntervalMs?: number;
  maxOutputBytes?: number;
  /** Run the leader's maintenance in this process (default true when it runs a worker). */
  leader?: boolean;
  /**
   * What one start may grow to (defaults: 10,000 for_each items per task, 100,000 tasks per plan, 1,000,000
   * CEL comprehension steps): a start over them fails with a for-each or cel-cost diagnostic.
   */
  limits?: Partial<CompileLimits>;
}

export interface StartOptions extends TxOption, Pick<CompileOptions, 'id'> {
  parentId?: string;
  group?: string;
}

export interface RegisterResult {
  validation: ValidationResult;
  /** Names whose current version changed. */
  registered: { name: string; hash: string }[];
  /** Names that had a registered version before this call. */
  registeredBefore: string[];
  /**
   * One line per workflow checked: `new` (its current version changes to `hash`), `unchanged`, or `error` (it
   * does not validate). With `dryRun`, or `allOrNothing` and an error anywhere, nothing was written.
   */
  results: { name: string; file: string; status: 'new' | 'unchanged' | 'error'; hash?: string }[];
  /** Whether the versions were written. */
  applied: boolean;
}

export interface RegisterOptions {
  /** Report what would change, write nothing. */
  dryRun?: boolean;
  /** Register nothing when any definition has an error (the deploy step); otherwise valid ones register. */
  allOrNothing?: boolean;
}

export interface WorkflowStatus {
  workflow: WorkflowRecord;
  tasks: (TaskRecord & { pending_reason: string | null })[];
}

/**
 * Recovery defaults: a killed worker's attempts run again within dead-after plus one leader pass (~8 s), a
 * killed leader is replaced within its lease (5 s). Each worker heartbeats every 2 s.
 */
export const DEFAULT_HEARTBEAT_MS = 2000;
/** A queue's concurrency when nothing says otherwise. */
export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_DEAD_AFTER_MS = 7000;
export const DEFAULT_LEADER_LEASE_MS = 5000;

/** The braid runtime: inserts plans, runs handlers, advances workflows, and reads their state. */
export class Runtime {
  readonly schema: string;
  readonly db: Database;
  private readonly s: string;
  private readonly definitions: DefinitionCache;
  private readonly log: Logger;
  private readonly clock: Clock;
  private worker?: Worker;
  private leader?: LeaderService;
  readonly id = workerId();

  constructor(private readonly options: RuntimeOptions) {
    const given = options.database;
    // a pool is told from an adapter by shape, not class: the application's pg may be another copy than braid's
    const adapter = typeof given === 'object' && 'kind' in given && typeof (given as Database).transaction === 'function';
    this.ownsDatabase = !adapter;
    this.db = typeof given === 'string' ? createPostgres({ connectionString: given }) : adapter ? (given as Database) : createPostgres({ pool: given as pg.Pool });
    this.schema = options.schema ?? 'braid';
    this.s = quoteIdent(this.schema);
    this.definitions = new DefinitionCache(this.s);
    this.log = rateLimitedWarnings(options.logger ?? silentLogger);
    this.clock = options.clock;
  }

  /** Applies pending migrations (safe when several processes start together). */
  migrate(): Promise<string[]> {
    return migrate(this.db, this.schema);
  }

  /**
   * Validates definitions (a folder, or files and folders) together and registers each new version; an
   * unchanged file registers nothing. Invalid files are reported in `validation` and leave their last good
   * version current (with `allOrNothing`, nothing registers while any is invalid).
   */
  async registerDefinitions(from: string | readonly string[], options: RegisterOptions = {}): Promise<RegisterResult> {
    const known = await registeredNames(this.db, this.s);
    const current = await currentHashes(this.db, this.s);
    const validation = validate(readSources(typeof from === 'string' ? [from] : from), { knownWorkflows: known });
    const valid = new Map(validation.definitions.map((d) => [d.file, d]));
    const results: RegisterResult['results'] = validation.checked.map((c) => {
      const def = valid.get(c.file);
      if (!def) return { name: c.name ?? '', file: c.file, status: 'error' };
      return current.get(def.name) === def.hash ? { name: def.name, file: c.file, status: 'unchanged', hash: def.hash } : { name: def.name, file: c.file, status: 'new', hash: def.hash };
    });
    const applied = !options.dryRun && !(options.allOrNothing && validation.errors > 0);
    const registered: { name: string; hash: string }[] = [];
    if (applied) {
      await this.db.transaction(async (tx) => {
        for (const def of validation.definitions) {
          const r = await registerVersion(tx, this.s, { name: def.name, hash: def.hash, normalized: def.normalized, file: def.file });
          this.definitions.remember(def.name, def.hash, def.normalized);
          if (r.madeCurrent) registered.push({ name: def.name, hash: def.hash });
        }
      });
    }
    return { validation, registered, registeredBefore: known, results, applied };
  }

  /** A workflow's registered versions, newest first, with which is current and how many workflows run on each. */
  async versions(name: string): Promise<(DefinitionVersion & { running: number })[]> {
    const versions = (await listDefinitionVersions(this.db, this.s)).filter((v) => v.name === name);
    const running = await runningPerVersion(this.db, this.s, name);
    return versions.map((v) => ({ ...v, running: running.get(v.hash) ?? 0 }));
  }

  /** Inserts a compiled plan in one transaction (or in the caller's); workers are woken on commit. */
  async insert(plan: Plan, options: TxOption & InsertExtras = {}): Promise<string> {
    await inTransaction(this.db, options, async (tx) => insertPlan(tx, this.advanceContext(await currentTime(this.db, this.clock, tx)), plan, options));
    return plan.workflow.id;
  }

  /** Starts a workflow from the current version of `name`: compiled with `inputs`, then inserted. */
  async start(name: string, inputs: unknown = {}, options: StartOptions = {}): Promise<string> {
    assertStorable(inputs, 'the inputs');
    return inTransaction(this.db, options, async (tx) => {
      const def = await currentDefinition(tx, this.s, name);
      if (!def) throw new UnknownWorkflowError(name);
      const now = await currentTime(this.db, this.clock, tx);
      const plan = compile(def.normalized, inputs, { id: options.id, now, limits: this.options.limits });
      plan.workflow.definition.hash = def.hash;
      await insertPlan(tx, this.advanceContext(now), plan, { parentId: options.parentId, group: options.group });
      return plan.workflow.id;
    });
  }

  /**
   * Workflows newest first, filtered by state and name, `limit` per page (at most 500); pass the page's
   * `next_cursor` back as `cursor` for the next one.
   */
  async listWorkflows(filter: { state?: WorkflowRecord['state']; name?: string; cursor?: string; limit?: number } = {}): Promise<{ workflows: WorkflowSummary[]; next_cursor: string | null }> {
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500);
    const f: WorkflowListFilter = { state: filter.state, name: filter.name, after: filter.cursor ? decodeCursor(filter.cursor) : undefined, limit: limit + 1 };
    const rows = await listWorkflows(this.db, this.s, f);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      workflows: page.map(({ cursor_at: _, ...w }) => w),
      next_cursor: rows.length > limit && last ? Buffer.from(JSON.stringify([last.cursor_at, last.id])).toString('base64url') : null,
    };
  }

  /** The current version of every registered workflow. */
  currentDefinitions(): Promise<StoredDefinition[]> {
    return currentDefinitions(this.db, this.s);
  }

  /** Every registered definition version, newest first within each name, with which one is current. */
  definitionVersions(): Promise<DefinitionVersion[]> {
    return listDefinitionVersions(this.db, this.s);
  }

  /** One registered version (the current one without `hash`). */
  definition(name: string, hash?: string): Promise<StoredDefinition | undefined> {
    return hash ? definitionByHash(this.db, this.s, name, hash) : currentDefinition(this.db, this.s, name);
  }

  /** A handle on one workflow: reads and operations. */
  workflow(id: string): WorkflowHandle {
    return new WorkflowHandle(this, id);
  }

  /** Swaps the handlers (hot reload): tasks that start afterwards run the new code; running handlers finish on the old. */
  async setHandlers(handlers: Handlers): Promise<void> {
    this.options.handlers = handlers;
    await this.worker?.setHandlers(handlers);
  }

  /** Serves more queues from now on; queues already served keep their concurrency. */
  async addQueues(queues: Record<string, number>): Promise<void> {
    this.options.queues = { ...queues, ...this.options.queues };
    await this.worker?.addQueues(queues);
  }

  /** Starts the worker (and the leader service) with the configured handlers and queues. */
  async startWorker(): Promise<void> {
    const o = this.options;
    this.worker = new Worker({
      id: this.id,
      db: this.db,
      schema: this.schema,
      s: this.s,
      definitions: this.definitions,
      handlers: o.handlers ?? {},
      queues: { ...(o.queues ?? { default: DEFAULT_CONCURRENCY }) },
      prefetch: o.prefetch ?? 0,
      clock: this.clock,
      pollIntervalMs: o.pollIntervalMs ?? 1000,
      heartbeatIntervalMs: o.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS,
      abandonAfterMs: o.workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS,
      maxOutputBytes: o.maxOutputBytes ?? 1024 * 1024,
      limits: o.limits,
      log: this.log,
    });
    await this.worker.start();
    if (o.leader !== false) {
      this.leader = this.leaderService();
      await this.leader.start();
    }
  }

  private leaderService(): LeaderService {
    const o = this.options;
    return new LeaderService({
      id: this.id,
      db: this.db,
      schema: this.schema,
      s: this.s,
      definitions: this.definitions,
      clock: this.clock,
      log: this.log,
      leaseMs: o.leaderLeaseMs ?? DEFAULT_LEADER_LEASE_MS,
      promoteIntervalMs: o.pollIntervalMs ?? 1000,
      timerIntervalMs: o.timerIntervalMs ?? 1000,
      workerDeadAfterMs: o.workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS,
      retention: { closedMs: 24 * 3_600_000, cancelledMs: 24 * 3_600_000, taskMs: null, ...o.retention },
      retentionIntervalMs: o.retentionIntervalMs ?? 60_000,
    });
  }

  /** The leader's maintenance, once, now (tests call it instead of waiting; the leader runs it on its timer). */
  maintenance(): Promise<{ promoted: number; rescued: number; deleted: number; timers: number; effects: number }> {
    return (this.leader ?? this.leaderService()).runOnce({ retention: true });
  }

  get isLeader(): boolean {
    return this.leader?.isLeader ?? false;
  }

  /** Graceful stop: running handlers get `deadlineMs` to finish, then are aborted and their tasks released. */
  async stop(deadlineMs?: number): Promise<void> {
    await this.worker?.stop(deadlineMs);
    await this.leader?.stop();
    this.worker = undefined;
    this.leader = undefined;
  }

  private readonly ownsDatabase: boolean;

  /** Stops, and closes the database connections the runtime opened (from a URL, or beside a given pool). */
  async close(deadlineMs?: number): Promise<void> {
    await this.stop(deadlineMs);
    if (this.ownsDatabase) await this.db.close();
  }

  /** What an advancing transaction needs, at one clock reading. */
  advanceContext(now: Date): AdvanceContext {
    return { s: this.s, schema: this.schema, now, definitions: this.definitions };
  }

  /** Internals the workflow handle needs. */
  get internals(): { s: string; clock: Clock; definitions: DefinitionCache; workerDeadAfterMs: number } {
    return { s: this.s, clock: this.clock, definitions: this.definitions, workerDeadAfterMs: this.options.workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS };
  }
}

export class InvalidCursorError extends Error {
  readonly code = 'cursor_invalid' as const;
  constructor() {
    super('the cursor is not one this list gave out');
    this.name = 'InvalidCursorError';
  }
}

function decodeCursor(cursor: string): { created_at: string; id: string } {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof created_at === 'string' && typeof id === 'string' && /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:?\d\d)?|Z)?$/.test(created_at)) return { created_at, id };
  } catch {
    /* falls through */
  }
  throw new InvalidCursorError();
}

export class UnknownWorkflowError extends Error {
  readonly code = 'workflow_not_registered' as const;
  constructor(name: string) {
    super(`workflow ${name} is not registered; run braid register`);
    this.name = 'UnknownWorkflowError';
  }
}

export class WorkflowNotFoundError extends Error {
  readonly code = 'workflow_not_found' as const;
  constructor(id: string) {
    super(`no workflow with id "${id}"`);
    this.name = 'WorkflowNotFoundError';
  }
}

export class WorkflowHandle {
  constructor(
    private readonly rt: Runtime,
    readonly id: string,
  ) {}

  private get q(): Queryable {
    return this.rt.db;
  }

  async load(options: TxOption = {}): Promise<WorkflowRecord> {
    const w = await loadWorkflow((options.tx ? txQueryable(options.tx) : this.q), this.rt.internals.s, this.id);
    if (!w) throw new WorkflowNotFoundError(this.id);
    return w;
  }

  /** All tasks, paged (insertion order). */
  tasks(page: { limit?: number; offset?: number; tx?: Queryable } = {}): Promise<TaskRecord[]> {
    return loadTasks(page.tx ?? this.q, this.rt.internals.s, this.id, page);
  }

  async task(name: string, options: TxOption = {}): Promise<TaskRecord> {
    const [t] = await loadTasksByName((options.tx ? txQueryable(options.tx) : this.q), this.rt.internals.s, this.id, [name]);
    if (!t) throw new TaskNotFoundError(this.id, name);
    return t;
  }

  async output(name: string, options: TxOption = {}): Promise<unknown> {
    return (await this.task(name, options)).output;
  }

  /** A task's direct deps, or with `recursive` every task upstream of it. */
  async deps(name: string, options: TxOption & { recursive?: boolean } = {}): Promise<Record<string, TaskRecord>> {
    const q = (options.tx ? txQueryable(options.tx) : this.q);
    const found = new Map<string, TaskRecord>();
    let frontier = (await this.task(name, options)).deps;
    while (frontier.length > 0) {
      const rows = await loadTasksByName(q, this.rt.internals.s, this.id, frontier);
      for (const r of rows) found.set(r.name, r);
      frontier = options.recursive ? [...new Set(rows.flatMap((r) => r.deps))].filter((n) => !found.has(n)) : [];
    }
    return Object.fromEntries(found);
  }

  /** Cancels every task not yet final; running handlers are asked to stop. */
  async cancel(options: TxOption = {}): Promise<{ cancelled: string[]; stopping: string[] }> {
    const { s, clock, definitions } = this.rt.internals;
    const result = await inTransaction(this.rt.db, options, async (tx) =>
      cancelWorkflow(tx, { s, schema: this.rt.schema, now: await currentTime(this.rt.db, clock, tx), definitions }, this.id),
    );
    if (!result.found) throw new WorkflowNotFoundError(this.id);
    return { cancelled: result.cancelled, stopping: result.stopping };
  }

  /**
   * Deletes task rows: their dependents see a deleted dep (failed unless they ignore deleted deps).
   * Retention's per-task mode does this to finalized tasks; use it by hand only to unstick a workflow.
   */
  async deleteTasks(names: readonly string[], options: TxOption = {}): Promise<void> {
    const { s, clock, definitions } = this.rt.internals;
    await inTransaction(this.rt.db, options, async (tx) => {
      const ctx = { s, schema: this.rt.schema, now: await currentTime(this.rt.db, clock, tx), definitions };
      await lockWorkflows(tx, s, [this.id]);
      const result = await deleteTasks(tx, ctx, this.id, names);
      await notifyQueues(tx, this.rt.schema, result.queues);
    });
  }

  /**
   * Starts a new attempt of a finalized workflow: mode all (default), failed_only, or failed_and_downstream;
   * resetHistory clears the retried tasks' attempts and errors (max_attempts stays). Returns the new attempt and
   * the tasks that run again (none, and the same attempt, when the mode selects nothing).
   */
  async retry(options: TxOption & { mode?: RetryMode; resetHistory?: boolean } = {}): Promise<RetryResult> {
    const result = await inTransaction(this.rt.db, options, async (tx) =>
      retryWorkflow(tx, this.rt.advanceContext(await currentTime(this.rt.db, this.rt.internals.clock, tx)), this.id, { mode: options.mode ?? 'all', resetHistory: options.resetHistory ?? false }),
    );
    if (!result) throw new WorkflowNotFoundError(this.id);
    return result;
  }

  /**
   * Adds tasks to this running workflow (a `tasks:` map in the definition language; deps may name existing
   * tasks), checked by the compiler's passes, in one transaction (or the caller's) under the workflow's lock.
   * A name already taken is an ExtensionError. Returns the new tasks' names.
   */
  async extend(spec: ExtensionSpec, options: TxOption = {}): Promise<string[]> {
    const known = await registeredNames(this.rt.db, this.rt.internals.s);
    return inTransaction(this.rt.db, options, async (tx) =>
      extendWorkflow(tx, this.rt.advanceContext(await currentTime(this.rt.db, this.rt.internals.clock, tx)), this.id, spec, known),
    );
  }

  /** Emit and read this workflow's signals. */
  get signals(): WorkflowSignals {
    return new WorkflowSignals(this.rt, this.id);
  }

  /** A task's wait evaluated now, without writing (phase, each term's value, errors, inputs, truncation). */
  async waitDiagnostics(task: string, options: { signalScanLimit?: number } = {}): Promise<WaitDiagnostics> {
    const d = await waitDiagnostics(this.q, this.rt.advanceContext(await currentTime(this.q, this.rt.internals.clock)), this.id, task, options);
    if (!d) throw (await loadWorkflow(this.q, this.rt.internals.s, this.id)) ? new TaskNotFoundError(this.id, task) : new WorkflowNotFoundError(this.id);
    return d;
  }

  /** The workflow with its tasks, each pending one with why it waits. */
  async status(): Promise<WorkflowStatus> {
    const { s, clock, workerDeadAfterMs } = this.rt.internals;
    const workflow = await this.load();
    const tasks = await this.tasks();
    const kinds = await liveKinds(this.q, s, workerDeadAfterMs, await currentTime(this.q, clock));
    const byName = new Map(tasks.map((t) => [t.name, t]));
    return { workflow, tasks: tasks.map((t) => ({ ...t, pending_reason: pendingReason(t, byName, kinds) })) };
  }

  /** Resolves when the workflow is final (checks on every finalize notification, and polls as a fallback). */
  async waitUntilFinal(options: { timeoutMs?: number; pollMs?: number } = {}): Promise<WorkflowRecord> {
    const deadline = Date.now() + (options.timeoutMs ?? 24 * 3_600_000);
    let wake: () => void = () => undefined;
    const unlisten = await this.rt.db.listen(channels(this.rt.schema).workflow, (payload) => {
      if (payload.startsWith(`${this.id} `)) wake();
    });
    try {
      for (;;) {
        const state = await workflowState(this.q, this.rt.internals.s, this.id);
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

export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}

/** A workflow's signals: emit (with the run-in-my-transaction form) and the workflow-wide and task-scoped reads. */
export class WorkflowSignals {
  constructor(
    private readonly rt: Runtime,
    readonly workflowId: string,
  ) {}

  /**
   * Persists a signal and evaluates the waits that declare its key, in one transaction (or the caller's).
   * Throws SignalPayloadMismatch when an idempotency key is replayed with another payload, and
   * SignalAttemptMismatch when `attempt` is not the workflow's current attempt.
   */
  async emit(key: string, payload: unknown, options: EmitOptions & TxOption = {}): Promise<EmitResult> {
    const result = await inTransaction(this.rt.db, options, async (tx) =>
      emitSignal(tx, this.rt.advanceContext(await currentTime(this.rt.db, this.rt.internals.clock, tx)), this.workflowId, key, payload, options),
    );
    if (!result) throw new WorkflowNotFoundError(this.workflowId);
    return result;
  }

  /** Every signal of the workflow in id order, paged by cursor (audit views). */
  async list(options: ListOptions & TxOption = {}): Promise<SignalPage> {
    const q = (options.tx ? txQueryable(options.tx) : this.rt.db);
    if (!(await loadWorkflow(q, this.rt.internals.s, this.workflowId))) throw new WorkflowNotFoundError(this.workflowId);
    return listWorkflowSignals(q, this.rt.internals.s, this.workflowId, options);
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

  private async taskPage(task: string, options: TaskScopedOptions & TxOption & { key?: string; cursorId?: string; limit?: number; newestFirst?: boolean }): Promise<SignalPage> {
    const q = (options.tx ? txQueryable(options.tx) : this.rt.db);
    const page = await listTaskSignals(q, this.rt.internals.s, this.workflowId, task, options);
    if (!page) throw (await loadWorkflow(q, this.rt.internals.s, this.workflowId)) ? new TaskNotFoundError(this.workflowId, task) : new WorkflowNotFoundError(this.workflowId);
    return page;
  }
}
