import type { CompileOptions } from '../compiler/instantiate.js';
import type { RawSource } from '../compiler/parse.js';
import type { Plan } from '../compiler/plan.js';
import type { BaselineVersion } from '../deploy/baseline.js';
import { KeyOps } from './access/key-rotation.js';
import { UserOps } from './access/users.js';
import { type ActorOptions, auditStarts, namedActor } from './core/actor.js';
import { checkInputSearch } from './core/sensitive-search.js';
import { assertStorable } from './core/storable.js';
import { givenDatabase } from './db/given-database.js';
import { useDataKeys } from './db/sealing.js';
import { type Database, inTransaction, type TxOption } from './db/types.js';
import { inFlightVersions } from './deploys/in-flight.js';
import { definitionVersions, type RegisterOptions, type RegisterResult, registerDefinitions, unknownWorkflow, type VersionState } from './deploys/registry.js';
import type { UpgradeReport, UpgradeRequest } from './deploys/upgrades.js';
import type { AdvanceContext } from './engine/context.js';
import { DefinitionCache } from './engine/definition-cache.js';
import { type BulkOps, bulkOps } from './incidents/ops.js';
import { Pauses } from './incidents/pauses.js';
import type { LeaderService } from './maintenance/leader.js';
import type { MaintenanceCounts } from './maintenance/service.js';
import { CallbackOps } from './outside/callback-ops.js';
import { type EmitEventOptions, EventOps } from './outside/event-ops.js';
import { parseKeyRing } from './outside/secrets.js';
import { type ScheduleOps, scheduleOps } from './schedules/ops.js';
import { migrate } from './setup/migrate.js';
import { type AuditFilter, listAudit } from './sql/audit.js';
import { currentDefinition, currentDefinitions, definitionByHash, type StoredDefinition } from './sql/definitions.js';
import type { InsertExtras } from './sql/insert.js';
import { nextDue } from './sql/next-due.js';
import { quoteIdent } from './sql/schema.js';
import type { Clock } from './sql/time.js';
import type { WorkflowSummary } from './sql/workflows.js';
import { type Logger, rateLimitedWarnings, silentLogger } from './telemetry/log.js';
import { otelApi, otelMetricsActive } from './telemetry/otel-api.js';
import { checkTraceParent } from './telemetry/traceparent.js';
import { Tracing } from './telemetry/tracing.js';
import type { AuditRecord, EmitEventResult, WorkflowSearch } from './wire/index.js';
import type { Handlers } from './worker/handlers.js';
import type { Worker } from './worker/worker.js';
import { workerId } from './worker/worker-id.js';

export type { RegisterOptions, RegisterResult, VersionState };

import { advanceAt, advanceIn, clockNow, type RuntimeContext, workflowWrite } from './core/context.js';
import { WORKFLOW_ID, WorkflowIdInvalidError } from './errors.js';
import { listPage } from './reads/list-cursor.js';
import {
  DEFAULT_DEAD_AFTER_MS,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_SCHEMA,
  leaderSettings,
  type RuntimeOptions,
  STOP_GRACE_MS,
  workerSettings,
} from './runtime-options.js';
import { WorkflowHandle } from './workflow-handle.js';

export { WORKFLOW_ID } from './errors.js';
export { DEFAULT_CONCURRENCY, DEFAULT_DEAD_AFTER_MS, DEFAULT_HEARTBEAT_MS, DEFAULT_SCHEMA, type RuntimeOptions } from './runtime-options.js';
export { MAX_START_BATCH } from './wire/index.js';

/** A start's options; with an `actor`, the start is audited (an application's own starts, without one, are not). */
export interface StartOptions extends TxOption, ActorOptions, Pick<CompileOptions, 'id'> {
  parentId?: string;
  group?: string;
  /**
   * The W3C traceparent (and tracestate) of the caller's span, when it is not the active OpenTelemetry context
   * (a request's header, `braid start --traceparent`): the workflow's spans continue that trace.
   */
  traceparent?: string;
  tracestate?: string;
}

/** A batch start's options: per row business keys (`ids[i]` for row i; absent or null: none), and what a start takes. */
export type StartManyOptions = Omit<StartOptions, 'id'> & { ids?: readonly (string | null | undefined)[] };

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
    const { db, owned } = givenDatabase(options.database, { statementTimeoutMs: options.statementTimeoutMs });
    this.db = db;
    this.ownsDatabase = owned;
    this.schema = options.schema ?? DEFAULT_SCHEMA;
    this.s = quoteIdent(this.schema);
    this.definitions = new DefinitionCache(this.s);
    this.log = rateLimitedWarnings(options.logger ?? silentLogger);
    this.clock = options.clock;
    options.metrics?.attach(options.meterProvider);
    options.metrics?.bind(this.db, this.schema);
    this.ctx = {
      db: this.db,
      schema: this.schema,
      s: this.s,
      definitions: this.definitions,
      clock: this.clock,
      log: this.log,
      lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
      metrics: options.metrics,
      tracing: new Tracing(otelApi(), options.tracerProvider),
      keys: parseKeyRing(options.secret ?? process.env.BRAID_SECRET, options.secret !== undefined ? 'secret' : 'BRAID_SECRET'),
      publicUrl: options.publicUrl ?? (process.env.BRAID_PUBLIC_URL || undefined),
      dataKeys: useDataKeys(options.keys ?? process.env.BRAID_KEYS, options.keys !== undefined ? 'keys' : 'BRAID_KEYS'),
    };
    this.schedules = scheduleOps(this.ctx);
    this.pauses = new Pauses(this.ctx);
    this.bulk = bulkOps(this.ctx, this.id);
    this.callbacks = new CallbackOps(this.ctx);
    this.events = new EventOps(this.ctx);
    this.users = new UserOps(this.ctx);
    this.keys = new KeyOps(this.ctx);
  }

  /** The context every part of this runtime works with (its worker, leader and handles). */
  readonly ctx: RuntimeContext;

  /** Applies pending migrations (safe when several processes start together). */
  migrate(): Promise<string[]> {
    return migrate(this.db, this.schema);
  }

  /**
   * Validates definitions (a folder, files and folders, or sources) together and registers each new version.
   * Invalid files leave their last good version current (with `allOrNothing`, nothing registers while any is).
   */
  registerDefinitions(from: string | readonly string[] | { sources: readonly RawSource[] }, options: RegisterOptions = {}): Promise<RegisterResult> {
    return registerDefinitions(this.ctx, from, options, this.options.limits?.planTasks);
  }

  /** A name's registered versions, newest first: which is current, how many run on each, its drain state. */
  versions(name: string): Promise<VersionState[]> {
    return definitionVersions(this.ctx, name);
  }

  /**
   * What a deploy compares with (braid plan, register): every current version and every version with running
   * workflows, of the names given or of all, each with the kinds and signal keys its running workflows need
   * (and, with `started`, the tasks they have started: whether braid upgrade could move them).
   */
  deployBaseline(names?: readonly string[], options: { started?: boolean } = {}): Promise<BaselineVersion[]> {
    return inFlightVersions(this.db, this.s, names, options.started === true);
  }

  /**
   * Moves running workflows of `name` to another version on purpose (default: every one on an older version,
   * to the current one), each in its own transaction under its lock, or not at all with the reason: every task
   * that has started must exist in the target (by name or renamed_from) with the same kind.
   */
  async upgrade(name: string, request: UpgradeRequest = {}): Promise<UpgradeReport> {
    const { upgradeWorkflows } = await import('./deploys/upgrades.js');
    return upgradeWorkflows(this.ctx, name, request, this.options.limits);
  }

  /** Inserts a compiled plan in one transaction (or in the caller's); workers are woken on commit. */
  async insert(plan: Plan, options: TxOption & InsertExtras = {}): Promise<string> {
    const { insertPlan } = await import('./engine/insert.js');
    await inTransaction(this.db, options, async (tx) => insertPlan(tx, await advanceIn(this.ctx, tx), plan, options));
    return plan.workflow.id;
  }

  /** Starts a workflow from the current version of `name`: compiled with `inputs`, then inserted. Returns its id. */
  async start(name: string, inputs: unknown = {}, options: StartOptions = {}): Promise<string> {
    return (await this.startWorkflow(name, inputs, options)).id;
  }

  /**
   * Starts a workflow, saying whether it was already there: with a caller-chosen `id` (a business key),
   * starting again with the same name and inputs finds the workflow that id started (`existing: true`);
   * another name or other inputs is a WorkflowConflictError.
   */
  async startWorkflow(name: string, inputs: unknown = {}, options: StartOptions = {}): Promise<{ id: string; existing: boolean }> {
    if (options.id !== undefined && (typeof options.id !== 'string' || !WORKFLOW_ID.test(options.id))) throw new WorkflowIdInvalidError(options.id);
    assertStorable(inputs, 'the inputs');
    // the compiler and the insertion load with the first start: commands that only read never load them
    const { startIn } = await import('./engine/start.js');
    const caller = checkTraceParent(options.traceparent, options.tracestate);
    const who = namedActor(options);
    return workflowWrite(this.ctx, options, options.id ?? name, async (tx, advance) => {
      const def = await currentDefinition(tx, this.s, name);
      if (!def) throw await unknownWorkflow(tx, this.s, name);
      const extras = { parentId: options.parentId, group: options.group };
      const started = await startIn(tx, advance, def, inputs, { id: options.id, limits: this.options.limits, caller, extras });
      await auditStarts(tx, advance, who, name, [started]);
      return started;
    });
  }

  /**
   * Starts many workflows of `name`'s current version in one statement, all or nothing (in the caller's `tx` when
   * given); a row that cannot start is a BatchRowError. Each row's id and whether it existed (business keys, `ids`).
   */
  async startMany(name: string, inputsList: readonly unknown[], options: StartManyOptions = {}): Promise<{ id: string; existing: boolean }[]> {
    const { batchRows, startManyIn } = await import('./engine/start-many.js');
    const rows = batchRows(inputsList, options.ids);
    if (rows.length === 0) return [];
    const caller = checkTraceParent(options.traceparent, options.tracestate);
    const who = namedActor(options);
    return workflowWrite(this.ctx, options, name, async (tx, advance) => {
      const def = await currentDefinition(tx, this.s, name);
      if (!def) throw await unknownWorkflow(tx, this.s, name);
      const extras = { parentId: options.parentId, group: options.group };
      const started = await startManyIn(tx, advance, def, rows, { limits: this.options.limits, caller, extras });
      await auditStarts(tx, advance, who, name, started);
      return started;
    });
  }

  /** Workflows newest first, searched by every filter given (WorkflowSearch), `limit` a page (<= 500); `next_cursor` pages on. */
  async listWorkflows(filter: WorkflowSearch = {}): Promise<{ workflows: WorkflowSummary[]; next_cursor: string | null }> {
    await checkInputSearch(this.db, this.s, filter);
    return listPage(this.db, this.s, filter);
  }

  /** Schedules: read with their next ticks and runs, paused, resumed, a tick now, a range backfilled. */
  readonly schedules: ScheduleOps;

  /** Pauses without a deploy: a queue's, a kind's or a workflow name's tasks held from claims until resumed. */
  readonly pauses: Pauses;
  /** Bulk operations by filter (braid bulk): retry, cancel, upgrade or signal every workflow a filter selects. */
  readonly bulk: BulkOps;
  /** Callback terms' signed links: make them, take their POSTs. */
  readonly callbacks: CallbackOps;
  /** The event log (rt.events.list), and emits (as rt.emit). */
  readonly events: EventOps;
  /** People and their roles (braid users): their tokens, and who a request is. */
  readonly users: UserOps;
  /** The data keys' rotation (braid keys rotate): every sealed value moved to the current key. */
  readonly keys: KeyOps;

  /**
   * Records an event and starts every workflow whose trigger it matches, in one transaction (the caller's `tx`:
   * a rollback starts nothing); the same name and `id` again starts nothing (duplicate: true).
   */
  emit(name: string, payload: unknown = null, options: EmitEventOptions = {}): Promise<EmitEventResult> {
    return this.events.emit(name, payload, options);
  }

  /** The audit trail of operator actions, newest first (braid audit); `action: 'bulk.*'` matches a prefix. */
  auditTrail(filter: AuditFilter = {}): Promise<AuditRecord[]> {
    return listAudit(this.db, this.s, { ...filter, limit: Math.min(Math.max(filter.limit ?? 100, 1), 1000) });
  }

  /** The current version of every registered workflow. */
  currentDefinitions(): Promise<StoredDefinition[]> {
    return currentDefinitions(this.db, this.s);
  }

  /** Every registered definition version, newest first within each name, with which one is current. */
  definitionVersions(): Promise<VersionState[]> {
    return definitionVersions(this.ctx);
  }

  /** One registered version (the current one without `hash`). */
  definition(name: string, hash?: string): Promise<StoredDefinition | undefined> {
    return hash ? definitionByHash(this.db, this.s, name, hash) : currentDefinition(this.db, this.s, name);
  }

  /** One registered version by hash or a unique prefix of it (the current one without): an error names what is wrong. */
  async version(name: string, hash?: string): Promise<StoredDefinition> {
    const { resolveVersion } = await import('./deploys/upgrades.js');
    return resolveVersion(this.db, this.s, name, hash);
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
    this.ctx.metrics?.serveQueues(Object.keys(queues));
    await this.worker?.addQueues(queues);
  }

  /** Starts the worker (and the leader service) with the configured handlers and queues. */
  async startWorker(): Promise<void> {
    const o = this.options;
    // the worker and the leader load when first started: a command that only reads (status, list) never does
    const { Worker } = await import('./worker/worker.js');
    await this.otelMetrics();
    const settings = workerSettings(o);
    this.ctx.metrics?.serveQueues(Object.keys(settings.queues));
    this.worker = new Worker({ ...this.ctx, id: this.id, ...settings });
    await this.worker.start();
    if (o.leader !== false) {
      this.leader = await this.leaderService();
      await this.leader.start();
    }
  }

  /**
   * OpenTelemetry metrics need no Metrics of the caller's: one is made (prom-client loads then, not with every
   * command) when a meter provider records and the worker or the leader starts.
   */
  private async otelMetrics(): Promise<void> {
    if (this.ctx.metrics || !otelMetricsActive(this.options.meterProvider)) return;
    const { Metrics } = await import('./telemetry/metrics.js');
    this.ctx.metrics = new Metrics(this.db, this.schema, { meterProvider: this.options.meterProvider });
  }

  private async leaderService(): Promise<LeaderService> {
    await this.otelMetrics();
    const { LeaderService } = await import('./maintenance/leader.js');
    return new LeaderService({ ...this.ctx, id: this.id, ...leaderSettings(this.options) });
  }

  /**
   * One round of every maintenance service, now (tests call it instead of waiting; the leader runs each on its
   * interval): timers fired, effects applied, tasks promoted, attempts rescued, crash leftovers swept, rows deleted.
   * `only` names the services to run (the counts' keys), e.g. what moves runs along without a crash to mend.
   */
  async maintenance(options: { only?: readonly (keyof MaintenanceCounts)[] } = {}): Promise<MaintenanceCounts> {
    this.maintainer ??= this.leader ? Promise.resolve(this.leader) : this.leaderService();
    return (await this.maintainer).runOnce(options.only);
  }

  /** The services `maintenance()` runs when this process has no leader of its own (made once, on first use). */
  private maintainer?: Promise<LeaderService>;

  /** When maintenance next has work at a later time (a timer, a deadline, a scheduled or retrying task); null if never. */
  async nextDue(): Promise<Date | null> {
    return nextDue(this.db, this.s, await clockNow(this.ctx));
  }

  /**
   * What this process's worker holds right now (attempts running or claimed, fetches, completions and ends not
   * yet committed): 0 when it has nothing in hand. `braid test` moves its virtual clock only then.
   */
  workInHand(): number {
    return this.worker?.inHand() ?? 0;
  }

  /** Makes the worker look for available work now, as its poll would. */
  pollWorker(): void {
    this.worker?.wakeAll();
  }

  get isLeader(): boolean {
    return this.leader?.isLeader ?? false;
  }

  /** Graceful stop: running handlers get `deadlineMs` to finish, then are aborted and their tasks released. */
  async stop(deadlineMs = 10_000): Promise<void> {
    // side by side, each bounded: whatever the database does, stopping ends about a second after the deadline
    await Promise.all([this.worker?.stop(deadlineMs), this.leader?.stop(deadlineMs + STOP_GRACE_MS)]);
    this.worker = undefined;
    this.leader = undefined;
    this.maintainer = undefined;
  }

  private readonly ownsDatabase: boolean;

  /** Stops, and closes the database connections the runtime opened (from a URL, or beside a given pool). */
  async close(deadlineMs?: number): Promise<void> {
    await this.stop(deadlineMs);
    if (this.ownsDatabase) await this.db.close();
  }

  /** What an advancing transaction needs, at one clock reading. */
  advanceContext(now: Date): AdvanceContext {
    return advanceAt(this.ctx, now);
  }

  /** Internals the workflow handle needs. */
  get internals(): RuntimeContext & { workerDeadAfterMs: number } {
    return { ...this.ctx, workerDeadAfterMs: this.options.workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS };
  }
}

export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}
