import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ApiClient, ApiError, ApiUnreachableError, type ListFilter, type WorkflowVersion } from '../api/client.js';
import type { TaskActionBody } from '../api/route-table.js';
import { CompileError } from '../compiler/compile-error.js';
import { formatText } from '../compiler/format/text.js';
import type { BaselineVersion } from '../deploy/baseline.js';
import { isShared, privateDir, writePrivateFile } from '../private-files.js';
import type { PgliteDatabase } from '../runtime/db/pglite.js';
import type { Database } from '../runtime/db/types.js';
import {
  BatchRowError,
  type BulkCreated,
  type BulkRequest,
  cachedImage,
  createPglite,
  createPostgres,
  createRuntime,
  DatabaseDamagedError,
  DatabaseLockedError,
  DEFAULT_SCHEMA,
  keepMigratedImage,
  lockHolder,
  ping,
  type TaskAction,
  type TaskActionResult,
} from '../runtime/index.js';
import type { Runtime, RuntimeOptions } from '../runtime/runtime.js';
import type { WorkflowRecord, WorkflowSummary } from '../runtime/sql/workflows.js';
import type { BulkOperation, LogPage, PauseRecord, PauseScope, ScheduleRecord, ScheduleStart, WorkflowStatus } from '../runtime/wire/index.js';
import { bulkBody, followRemote } from './bulk-remote.js';

export type { ListFilter, WorkflowVersion };

import { ERROR_CODES, type ErrorCode, isCallerError } from '../error-codes.js';
import type { UpgradeReport, UpgradeRequest } from '../runtime/deploys/upgrades.js';
import type { RetryMode } from '../runtime/engine/decide.js';
import type { RetryResult } from '../runtime/engine/retry.js';
import type { StoredDefinition } from '../runtime/sql/definitions.js';
import type { WaitDiagnostics } from '../runtime/waits/diagnostics.js';
import type { EmitOptions, EmitResult } from '../runtime/waits/signals.js';
import type { AuditRecord, CallbackLinkUrl, EmitEventResult, EventRecord, StreamChunk } from '../runtime/wire/index.js';
import { actorName } from './actor.js';
import { readSourceTexts } from './definitions.js';
import { ConnectionError, type Io, SubjectError } from './io.js';
import { braidDir, databaseUrl, linkOptions, project, schemaName } from './project.js';

export { braidDir, databaseUrl };

/** The address of the process holding the project's embedded database, beside it under .braid/. */
export function apiFile(io: Io): string {
  return join(braidDir(io), 'api.json');
}

/** Who a command acts as (--actor, else BRAID_ACTOR or the OS user) and why (--reason), for the audit trail. */
export interface CliActor {
  actor?: string;
  reason?: string;
}

/** The --database and --schema flags (the config file and DATABASE_URL fill in what they leave out). */
export interface DatabaseChoice {
  url?: string;
  schema?: string;
  /** A new embedded database may start from the kept migrated image (default true; not for `braid migrate`, which shows what it applies). */
  fromImage?: boolean;
}

/**
 * The project's embedded database. A new one with braid's default schema starts from the migrated image a
 * second or so faster than an initdb and its migrations; without an image, it is made and migrated here, and
 * its image kept for the next new one.
 */
async function openEmbedded(dir: string, fromImage: boolean): Promise<PgliteDatabase> {
  const fresh = !existsSync(join(dir, 'pgdata'));
  const image = fresh && fromImage ? cachedImage() : undefined;
  const db = await createPglite({ dataDir: dir, loadDataDir: image });
  if (fresh && fromImage && !image) {
    await createRuntime({ database: db, leader: false }).migrate();
    await keepMigratedImage(db);
  }
  return db;
}

/** Opens the database this process will hold: Postgres when a URL is given (or configured), else the project's embedded one. */
export async function openDatabase(io: Io, choice: DatabaseChoice): Promise<Database> {
  const url = databaseUrl(io, choice.url);
  // read before connecting: a config with problems is the command's failure, not the connection's
  const statementTimeoutMs = project(io).config?.statementTimeoutMs;
  try {
    if (url) {
      const db = createPostgres({ connectionString: url, statementTimeoutMs });
      await ping(db);
      return db;
    }
    privateDir(braidDir(io));
    return await openEmbedded(join(braidDir(io), 'db'), (schemaName(io, choice.schema) ?? DEFAULT_SCHEMA) === DEFAULT_SCHEMA && choice.fromImage !== false);
  } catch (error) {
    if (error instanceof DatabaseLockedError || error instanceof DatabaseDamagedError) throw new ConnectionError(error.message);
    throw new ConnectionError(`cannot connect to the database: ${(error as Error).message}`);
  }
}

/** What the operating commands (start, status, cancel) need, whether the database is here or behind the API. */
export interface Backend {
  /** Starts a workflow (with `id`, a business key: the same start again finds it, `existing`). */
  start(name: string, inputs: unknown, options?: { id?: string; traceparent?: string }): Promise<{ id: string; existing: boolean }>;
  /** Starts a batch of workflows, all or nothing; a row at fault is a BatchRowError (local or remote). */
  startMany(name: string, rows: readonly { inputs: unknown; id?: string }[]): Promise<{ id: string; existing: boolean }[]>;
  /** A workflow and its tasks, sensitive values redacted unless `reveal` (audited). */
  status(id: string, options?: { reveal?: boolean }): Promise<WorkflowStatus>;
  logs(id: string, options: { task?: string; attempt?: number; after?: string; limit?: number }): Promise<LogPage>;
  cancel(id: string): Promise<{ cancelled: string[]; stopping: string[] }>;
  signal(id: string, key: string, payload: unknown, options: EmitOptions): Promise<EmitResult>;
  retry(id: string, options: { mode: RetryMode; resetHistory: boolean; onCurrent?: boolean }): Promise<RetryResult>;
  /** Moves running workflows of a name to another version (braid upgrade). */
  upgrade(name: string, request: UpgradeRequest): Promise<UpgradeReport>;
  /** One registered version by hash or unique prefix (the current one without). */
  version(name: string, hash?: string): Promise<StoredDefinition>;
  diagnose(id: string, task: string, options: { signalScanLimit?: number }): Promise<WaitDiagnostics>;
  callbackLinks(id: string, task: string, term: string): Promise<CallbackLinkUrl[]>;
  emitEvent(name: string, payload: unknown, id?: string): Promise<EmitEventResult>;
  audit(filter: { actor?: string; action?: string; target?: string; since?: string; limit?: number }): Promise<AuditRecord[]>;
  /** A task's output stream, each chunk to onChunk (following: until the task ends); the task's state at the end when following. */
  followStream(id: string, task: string, name: string, follow: boolean, onChunk: (c: StreamChunk) => void): Promise<string | null>;
  listEvents(filter: { name?: string; limit?: number; before?: string }): Promise<EventRecord[]>;
  waitFinal(id: string, timeoutMs: number): Promise<WorkflowRecord>;
  versions(name: string): Promise<WorkflowVersion[]>;
  /** The versions a deploy compares with: current ones and those with running workflows (of the names given, or all). */
  deployBaseline(names?: readonly string[], options?: { started?: boolean }): Promise<BaselineVersion[]>;
  list(filter: ListFilter): Promise<{ workflows: WorkflowSummary[]; next_cursor: string | null }>;
  /** Schedules (of one workflow), with their next ticks and latest runs. */
  schedules(workflow: string | undefined, shown: { next?: number; runs?: number }): Promise<ScheduleRecord[]>;
  schedule(workflow: string, schedule: string, action: 'pause' | 'resume'): Promise<ScheduleRecord>;
  trigger(workflow: string, schedule: string): Promise<ScheduleStart>;
  pauses(): Promise<PauseRecord[]>;
  bulkCreate(request: BulkRequest): Promise<BulkCreated>;
  /** Follows an operation to its end, acting on it here (or, through the API, as the server does), progress told as it goes. */
  bulkRun(name: string, onProgress: (op: BulkOperation) => void, signal: AbortSignal): Promise<BulkOperation>;
  bulkList(): Promise<BulkOperation[]>;
  bulkGet(name: string): Promise<BulkOperation>;
  bulkCancel(name: string, who: { actor: string; reason?: string }): Promise<BulkOperation>;
  taskAction(id: string, task: string, action: TaskAction, body: TaskActionBody & { output?: unknown }): Promise<TaskActionResult>;
  setPause(action: 'pause' | 'resume', scope: PauseScope, target: string, who: { actor: string; reason?: string }): Promise<PauseRecord>;
  backfill(workflow: string, schedule: string, from: Date, to: Date, dryRun: boolean): Promise<ScheduleStart[]>;
  /** Whether some process is running handlers (a `--wait` without one would wait forever). */
  readonly remote: boolean;
  close(): Promise<void>;
}

/**
 * The embedded database belongs to one process: when `braid worker` or `braid dev` holds it, commands go
 * through that process's local API; otherwise they open the database (or Postgres) themselves.
 */
export async function openBackend(io: Io, choice: DatabaseChoice, options: Partial<RuntimeOptions> = {}, as: CliActor = {}): Promise<Backend> {
  // every change a command makes is audited as its actor (--actor, BRAID_ACTOR or the OS user), with --reason
  const who = { actor: actorName(as.actor), ...(as.reason !== undefined ? { reason: as.reason } : {}) };
  if (!databaseUrl(io, choice.url)) {
    const holder = lockHolder(join(braidDir(io), 'db'));
    if (holder !== undefined) return remoteBackend(io, holder, who);
  }
  const db = await openDatabase(io, choice);
  const rt = createRuntime({
    database: db,
    schema: schemaName(io, choice.schema),
    lockTimeoutMs: project(io).config?.lockTimeoutMs,
    ...linkOptions(io, choice.url),
    ...options,
  });
  try {
    await rt.migrate();
  } catch (error) {
    await db.close();
    throw new ConnectionError(`cannot prepare the database: ${(error as Error).message}`);
  }
  return directBackend(io, rt, db, who);
}

function directBackend(io: Io, rt: Runtime, db: Database, who: { actor: string; reason?: string }): Backend {
  return {
    remote: false,
    start: (name, inputs, options = {}) => rethrow(io, () => rt.startWorkflow(name, inputs, { ...options, ...who })),
    startMany: (name, rows) =>
      rethrow(io, () =>
        rt.startMany(
          name,
          rows.map((r) => r.inputs),
          { ids: rows.map((r) => r.id), ...who },
        ),
      ),
    status: (id, o = {}) => rethrow(io, async () => jsonClone(await rt.workflow(id).status({ reveal: o.reveal, ...who }))),
    logs: (id, options) => rethrow(io, async () => jsonClone(await rt.workflow(id).logs(options))),
    cancel: (id) => rethrow(io, () => rt.workflow(id).cancel(who)),
    signal: (id, key, payload, options) => rethrow(io, async () => jsonClone(await rt.workflow(id).signals.emit(key, payload, { ...options, ...who }))),
    diagnose: (id, task, options) => rethrow(io, async () => jsonClone(await rt.workflow(id).waitDiagnostics(task, options))),
    callbackLinks: (id, task, term) => rethrow(io, () => rt.callbacks.links(id, task, term)),
    emitEvent: (name, payload, id) => rethrow(io, async () => jsonClone(await rt.emit(name, payload, { id, ...who }))),
    audit: (f) => rethrow(io, async () => jsonClone(await rt.auditTrail({ ...f, since: f.since === undefined ? undefined : new Date(f.since) }))),
    listEvents: (filter) => rethrow(io, async () => jsonClone(await rt.events.list({ ...filter, redact: true }))),
    followStream: (id, task, name, follow, onChunk) =>
      rethrow(io, async () => {
        const wf = rt.workflow(id);
        for await (const c of wf.stream(task, name, { follow })) onChunk(c);
        return follow ? (await wf.task(task)).state : null;
      }),
    retry: (id, options) => rethrow(io, () => rt.workflow(id).retry({ ...options, ...who })),
    upgrade: (name, request) => rethrow(io, async () => jsonClone(await rt.upgrade(name, { ...request, ...who }))),
    version: (name, hash) => rethrow(io, () => rt.version(name, hash)),
    waitFinal: (id, timeoutMs) =>
      rethrow(io, async () => {
        const handle = rt.workflow(id);
        // at the timeout the workflow is returned as it is then, as the API's long poll does: still running, or
        // ended between the wait's last look and this one (a failure to read it is the error)
        const w = await handle.waitUntilFinal({ timeoutMs, pollMs: 250 }).then(
          () => handle.load({ redact: true }),
          () => handle.load({ redact: true }),
        );
        return jsonClone(w);
      }),
    versions: async (name) => jsonClone(await rt.versions(name)),
    deployBaseline: (names, options) => rt.deployBaseline(names, options),
    list: (filter) => rethrow(io, async () => jsonClone(await rt.listWorkflows(filter))),
    schedules: (workflow, shown) => rethrow(io, async () => jsonClone(await rt.schedules.list(workflow, shown))),
    schedule: (workflow, schedule, action) => rethrow(io, async () => jsonClone(await rt.schedules[action](workflow, schedule, who))),
    trigger: (workflow, schedule) => rethrow(io, () => rt.schedules.trigger(workflow, schedule, who)),
    pauses: () => rethrow(io, async () => jsonClone(await rt.pauses.list())),
    bulkCreate: (request) => rethrow(io, async () => jsonClone(await rt.bulk.create(request))),
    bulkRun: (name, onProgress, signal) => rethrow(io, async () => jsonClone(await rt.bulk.run(name, { follow: true, onProgress, signal }))),
    bulkList: () => rethrow(io, async () => jsonClone(await rt.bulk.list())),
    bulkGet: (name) => rethrow(io, async () => jsonClone(await rt.bulk.get(name))),
    bulkCancel: (name, who) => rethrow(io, async () => jsonClone(await rt.bulk.cancel(name, who))),
    taskAction: (id, task, action, body) => rethrow(io, () => rt.workflow(id).taskAction(task, action, { ...body, dryRun: body.dry_run === true })),
    setPause: (action, scope, target, who) => rethrow(io, async () => jsonClone(await rt.pauses[action](scope, target, who))),
    backfill: (workflow, schedule, from, to, dryRun) => rethrow(io, () => rt.schedules.backfill(workflow, schedule, from, to, { dryRun, ...who })),
    close: async () => {
      await rt.stop(0);
      await db.close();
    },
  };
}

function jsonClone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

async function rethrow<T>(io: Io, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    // a batch's row at fault: the command names its line
    if (error instanceof BatchRowError) throw error;
    if (error instanceof CompileError) throw new SubjectError(formatText(error.diagnostics, { sources: readSourceTexts(error, io) }).trimEnd());
    if (isCallerError(error)) throw new SubjectError(error.message);
    throw error;
  }
}

function remoteBackend(io: Io, holder: number, who: { actor: string; reason?: string }): Backend {
  let info: { url: string; token: string; pid: number };
  try {
    info = JSON.parse(readFileSync(apiFile(io), 'utf8')) as typeof info;
  } catch {
    throw new ConnectionError(`the embedded database in .braid/ is held by process ${holder}, which serves no API (stop it, or use its own output)`);
  }
  // a user's token (once users exist, the project's own token is refused): BRAID_TOKEN
  const api = new ApiClient(info.url, process.env.BRAID_TOKEN || info.token, who);
  // the code decides, as it does for a direct call: the caller's error, or braid's
  const guard = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ApiUnreachableError) throw new ConnectionError(`cannot reach process ${holder} at ${info.url}: ${error.message}`);
      if (!(error instanceof ApiError)) throw error;
      const code = error.code;
      if (code !== undefined && Object.hasOwn(ERROR_CODES, code) && ERROR_CODES[code as ErrorCode].exit === 'failed')
        throw new SubjectError(error.diagnostics ? formatText(error.diagnostics as never[], { sources: new Map() }).trimEnd() : error.message);
      throw new ConnectionError(`process ${holder} answered ${error.status}: ${error.message}`);
    }
  };
  return {
    remote: true,
    // the holding process registers its own definitions folder before it starts one
    start: (name, inputs, options) => guard(() => api.start(name, inputs, options)),
    // a row at fault comes back as the direct call throws it
    startMany: (name, rows) =>
      guard(() =>
        api.startMany(name, rows).catch((error: unknown) => {
          if (error instanceof ApiError && error.row !== undefined) throw new BatchRowError(error.row, remoteCause(error));
          throw error;
        }),
      ),
    status: (id, o = {}) => guard(() => api.status(id, o.reveal)),
    logs: (id, options) => guard(() => api.logs(id, options)),
    cancel: (id) => guard(() => api.cancel(id)),
    signal: (id, key, payload, options) => guard(() => api.signal(id, key, payload, options)),
    retry: (id, options) => guard(() => api.retry(id, options)),
    upgrade: (name, request) => guard(() => api.upgrade(name, request)),
    version: (name, hash) => guard(() => api.version(name, hash)),
    diagnose: (id, task, options) => guard(() => api.diagnose(id, task, options)),
    callbackLinks: (id, task, term) => guard(() => api.callbackLinks(id, task, term)),
    emitEvent: (name, payload, id) => guard(() => api.emitEvent(name, payload, id)),
    audit: (f) => guard(() => api.audit(f)),
    listEvents: (filter) => guard(() => api.listEvents(filter)),
    followStream: (id, task, name, follow, onChunk) => guard(() => api.followStream(id, task, name, follow, onChunk)),
    waitFinal: (id, timeoutMs) => guard(() => api.waitFinal(id, timeoutMs)),
    versions: (name) => guard(() => api.versions(name)),
    deployBaseline: (names, options) => guard(() => api.deployBaseline(names, options)),
    list: (filter) => guard(() => api.list(filter)),
    schedules: (workflow, shown) => guard(() => api.schedules(workflow, shown)),
    schedule: (workflow, schedule, action) => guard(() => api.schedule(workflow, schedule, action)),
    trigger: (workflow, schedule) => guard(() => api.trigger(workflow, schedule)),
    pauses: () => guard(() => api.pauses()),
    bulkCreate: (r) => guard(() => api.bulkCreate(bulkBody(r))),
    bulkRun: (name, onProgress, signal) => guard(() => followRemote(api, name, onProgress, signal)),
    bulkList: () => guard(() => api.bulkList()),
    bulkGet: (name) => guard(() => api.bulkStatus(name)),
    bulkCancel: (name, who) => guard(() => api.bulkCancel(name, who)),
    taskAction: (id, task, action, body) => guard(() => api.taskAction(id, task, action, body)),
    setPause: (action, scope, target, who) => guard(() => api.setPause(action, scope, target, who)),
    backfill: (workflow, schedule, from, to, dryRun) => guard(() => api.backfill(workflow, schedule, from, to, dryRun)),
    close: async () => undefined,
  };
}

/**
 * The project's API token, made once and kept in .braid/token (readable by its owner only), so a browser
 * signed in to `braid dev` stays signed in across restarts. Never printed.
 */
export function projectToken(io: Io): string {
  privateDir(braidDir(io));
  const file = join(braidDir(io), 'token');
  try {
    const token = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{48}$/.test(token)) {
      if (isShared(file)) {
        chmodSync(file, 0o600);
        io.stderr(
          `braid: ${join('.braid', 'token')} could be read by other users: it is now owner-only ` +
            `(0600); replace the token if others may have read it (delete the file)\n`,
        );
      }
      return token;
    }
  } catch {
    /* made below */
  }
  const token = randomBytes(24).toString('hex');
  writePrivateFile(file, `${token}\n`);
  return token;
}

/** Publishes this process's API address for the project's other commands; removed at exit. */
export function publishApi(io: Io, api: { url: string; token: string }): () => void {
  privateDir(braidDir(io));
  writePrivateFile(apiFile(io), JSON.stringify({ url: api.url, token: api.token, pid: process.pid }));
  return () => {
    try {
      const current = JSON.parse(readFileSync(apiFile(io), 'utf8')) as { pid: number };
      if (current.pid === process.pid) rmSync(apiFile(io));
    } catch {
      /* gone */
    }
  };
}

/** A remote batch row's error as the direct call has it: the diagnostics when the inputs did not fit, else the message. */
function remoteCause(error: ApiError): Error & { code?: string } {
  const diagnostics = (error.diagnostics ?? []) as { message: string; rule: string }[];
  const cause = new Error(diagnostics.length > 0 ? diagnostics.map((d) => `${d.message} [${d.rule}]`).join('; ') : error.message) as Error & { code?: string };
  cause.code = error.code;
  return cause;
}
