/**
 * The HTTP API's routes, declared once: each route's method and path, and what it takes and answers. The server
 * dispatches by this table (a handler for every route, or it does not compile), ApiClient and the web UI build
 * their requests from it. Pure: the browser app imports it too.
 */
import type { BaselineVersion } from '../deploy/baseline.js';
import type { DrainState } from '../runtime/deploys/in-flight.js';
import type { UpgradeReport } from '../runtime/deploys/upgrades.js';
import type { RetryResult } from '../runtime/engine/retry.js';
import type { BulkCreated } from '../runtime/incidents/bulk.js';
import type { TaskActionResult } from '../runtime/incidents/task-actions.js';
import type { DefinitionVersion, StoredDefinition } from '../runtime/sql/definitions.js';
import type { EmitResult } from '../runtime/waits/signals.js';
import type {
  AuditRecord,
  BulkAction,
  BulkOperation,
  CallbackLinkUrl,
  EmitEventResult,
  EventRecord,
  LogPage,
  PauseRecord,
  PauseScope,
  Principal,
  Role,
  ScheduleRecord,
  ScheduleStart,
  SignalPage,
  WaitDiagnostics,
  WorkflowPage,
  WorkflowRecord,
  WorkflowStatus,
} from '../runtime/wire/index.js';

/** Where the API's paths begin (the rest of a server's paths are the web UI's). */
export const API_PREFIX = '/api';

export const ROUTES = {
  session: { method: 'POST', path: '/api/session' },
  me: { method: 'GET', path: '/api/me' },
  audit: { method: 'GET', path: '/api/audit' },
  events: { method: 'GET', path: '/api/events' },
  emitEvent: { method: 'POST', path: '/api/events' },
  eventList: { method: 'GET', path: '/api/events/recent' },
  emitNamedEvent: { method: 'POST', path: '/api/events/:name' },
  dev: { method: 'GET', path: '/api/dev' },
  baseline: { method: 'GET', path: '/api/deploy/baseline' },
  definitions: { method: 'GET', path: '/api/definitions' },
  register: { method: 'POST', path: '/api/definitions' },
  definition: { method: 'GET', path: '/api/definitions/:name' },
  versions: { method: 'GET', path: '/api/definitions/:name/versions' },
  diff: { method: 'GET', path: '/api/definitions/:name/diff' },
  upgrade: { method: 'POST', path: '/api/definitions/:name/upgrade' },
  schedules: { method: 'GET', path: '/api/schedules' },
  schedule: { method: 'GET', path: '/api/schedules/:workflow/:schedule' },
  pause: { method: 'POST', path: '/api/schedules/:workflow/:schedule/pause' },
  resume: { method: 'POST', path: '/api/schedules/:workflow/:schedule/resume' },
  trigger: { method: 'POST', path: '/api/schedules/:workflow/:schedule/trigger' },
  backfill: { method: 'POST', path: '/api/schedules/:workflow/:schedule/backfill' },
  pauses: { method: 'GET', path: '/api/pauses' },
  pauseScope: { method: 'POST', path: '/api/pauses' },
  resumeScope: { method: 'POST', path: '/api/pauses/resume' },
  bulkList: { method: 'GET', path: '/api/bulk' },
  bulkCreate: { method: 'POST', path: '/api/bulk' },
  bulkStatus: { method: 'GET', path: '/api/bulk/:name' },
  bulkCancel: { method: 'POST', path: '/api/bulk/:name/cancel' },
  workflows: { method: 'GET', path: '/api/workflows' },
  start: { method: 'POST', path: '/api/workflows' },
  startBatch: { method: 'POST', path: '/api/workflows/batch' },
  status: { method: 'GET', path: '/api/workflows/:id' },
  workflowEvents: { method: 'GET', path: '/api/workflows/:id/events' },
  cancel: { method: 'POST', path: '/api/workflows/:id/cancel' },
  retry: { method: 'POST', path: '/api/workflows/:id/retry' },
  emit: { method: 'POST', path: '/api/workflows/:id/signals' },
  signals: { method: 'GET', path: '/api/workflows/:id/signals' },
  logs: { method: 'GET', path: '/api/workflows/:id/logs' },
  wait: { method: 'GET', path: '/api/workflows/:id/wait' },
  diagnostics: { method: 'GET', path: '/api/workflows/:id/tasks/:task/diagnostics' },
  taskSignals: { method: 'GET', path: '/api/workflows/:id/tasks/:task/signals' },
  taskRetry: { method: 'POST', path: '/api/workflows/:id/tasks/:task/retry' },
  taskSkip: { method: 'POST', path: '/api/workflows/:id/tasks/:task/skip' },
  taskComplete: { method: 'POST', path: '/api/workflows/:id/tasks/:task/complete' },
  callbackLinks: { method: 'GET', path: '/api/workflows/:id/tasks/:task/callbacks/:term' },
  workflowEvent: { method: 'GET', path: '/api/workflows/:id/event' },
  taskStreams: { method: 'GET', path: '/api/workflows/:id/tasks/:task/streams' },
  taskStream: { method: 'GET', path: '/api/workflows/:id/tasks/:task/streams/:name' },
} as const satisfies Record<string, { method: 'GET' | 'POST'; path: string }>;

export type RouteName = keyof typeof ROUTES;

/** Routes only an admin may take: deploys (registers, upgrades) and schedules' operations. */
const ADMIN_ROUTES: readonly RouteName[] = ['register', 'upgrade', 'pause', 'resume', 'trigger', 'backfill'];

/** Reads that hand out a capability to act (a callback term's links answer for it): an operator's. */
const OPERATOR_READS: readonly RouteName[] = ['callbackLinks'];

/** The role a route needs: reads a viewer, changes an operator, deploys and schedules an admin. */
export function roleFor(route: RouteName): Role {
  if (ADMIN_ROUTES.includes(route)) return 'admin';
  if (OPERATOR_READS.includes(route)) return 'operator';
  return ROUTES[route].method === 'GET' ? 'viewer' : 'operator';
}

/** A path's `:name` segments, as an object of strings. */
type ParamsOf<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? { [K in Name | keyof ParamsOf<`/${Rest}`>]: string }
  : P extends `${string}:${infer Name}`
    ? { [K in Name]: string }
    : Record<never, string>;

export type RouteParams<R extends RouteName> = ParamsOf<(typeof ROUTES)[R]['path']>;

/** One version of a definition, with the workflows still running on it and whether it drains. */
export type WorkflowVersion = DefinitionVersion & { running: number; state: DrainState };

/**
 * A bulk operation asked over HTTP: the action, the list's filters as its query names them (state, name,
 * version, id_prefix, input: ["PATH=VALUE"], error, created_after, created_before, ...), `where` (CEL), the
 * operation's name, dry_run, rate (a second), the action's options, who and why.
 */
export interface BulkBody {
  action: BulkAction;
  filter?: Record<string, string | string[] | boolean>;
  where?: string;
  name?: string;
  dry_run?: boolean;
  rate?: number;
  options?: Record<string, unknown>;
  reason?: string;
  actor?: string;
}

/** Definitions registered over HTTP (braid register against a server): each file's name and text, all or nothing. */
export interface RegisterBody {
  files: readonly { path: string; content: string }[];
  dry_run?: boolean;
  reason?: string;
  actor?: string;
}

/** What a register did: each workflow's line (new, unchanged, error), the problems found, whether it was written. */
export interface RegisterReply {
  applied: boolean;
  results: { name: string; file: string; status: 'new' | 'unchanged' | 'error'; hash?: string }[];
  diagnostics: unknown[];
}

/** An operator's action on one task: who, why, and whether a running task's attempt is cancelled first. */
export interface TaskActionBody {
  reason?: string;
  actor?: string;
  force?: boolean;
}

/** What a POST route takes as its JSON body (snake_case, as on the wire). */
export interface RouteBodies {
  session: Record<string, never>;
  register: RegisterBody;
  upgrade: { from?: string; to?: string; ids?: readonly string[]; dry_run?: boolean; cancel_removed?: boolean; drop_evidence?: boolean };
  pause: Record<string, never>;
  resume: Record<string, never>;
  trigger: Record<string, never>;
  backfill: { from: string; to: string; dry_run?: boolean };
  pauseScope: { scope: PauseScope; target: string; reason?: string; actor?: string };
  resumeScope: { scope: PauseScope; target: string; reason?: string; actor?: string };
  bulkCreate: BulkBody;
  bulkCancel: { reason?: string; actor?: string };
  start: { name: string; inputs?: unknown; id?: string };
  startBatch: { name: string; workflows: readonly { inputs?: unknown; id?: string }[] };
  cancel: Record<string, never>;
  retry: { mode?: 'all' | 'failed_only' | 'failed_and_downstream'; reset_history?: boolean; on_current?: boolean };
  taskRetry: TaskActionBody;
  taskSkip: TaskActionBody;
  taskComplete: TaskActionBody & { output?: unknown };
  emitEvent: { name: string; payload?: unknown; id?: string };
  emitNamedEvent: unknown;
  emit: { key: string; payload?: unknown; idempotency_key?: string; source?: unknown; attempt?: number; any_key?: boolean };
}

/** What each route answers with a 2xx status (the event streams answer with server-sent events). */
export interface RouteReplies {
  session: null;
  me: Principal;
  audit: { lines: AuditRecord[] };
  events: never;
  dev: unknown;
  baseline: { versions: BaselineVersion[] };
  definitions: { definitions: unknown[]; reload: unknown };
  definition: StoredDefinition;
  versions: WorkflowVersion[];
  diff: { name: string; from: string; to: string; changes: unknown[] };
  register: RegisterReply;
  upgrade: UpgradeReport;
  schedules: { schedules: ScheduleRecord[] };
  schedule: ScheduleRecord;
  pause: ScheduleRecord;
  resume: ScheduleRecord;
  trigger: ScheduleStart;
  backfill: { runs: ScheduleStart[] };
  pauses: { pauses: PauseRecord[] };
  pauseScope: PauseRecord;
  resumeScope: PauseRecord;
  bulkList: { operations: BulkOperation[] };
  bulkCreate: BulkCreated;
  bulkStatus: BulkOperation;
  bulkCancel: BulkOperation;
  workflows: WorkflowPage;
  start: { id: string; existing?: boolean };
  startBatch: { workflows: { id: string; existing: boolean }[] };
  status: WorkflowStatus;
  workflowEvents: never;
  cancel: { cancelled: string[]; stopping: string[] };
  retry: RetryResult;
  emit: EmitResult;
  signals: SignalPage;
  logs: LogPage;
  wait: { workflow: WorkflowRecord };
  diagnostics: WaitDiagnostics;
  taskSignals: SignalPage;
  taskRetry: TaskActionResult;
  taskSkip: TaskActionResult;
  taskComplete: TaskActionResult;
  callbackLinks: { links: CallbackLinkUrl[] };
  emitEvent: EmitEventResult;
  emitNamedEvent: EmitEventResult;
  eventList: { events: EventRecord[] };
  taskStreams: { streams: { name: string; attempt: number; chunks: number }[] };
  taskStream: never;
  workflowEvent: { event: { seq: string; name: string; event_id: string; at: string } | null };
}

/** A query string's values: absent ones left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** The path of a route with its parameters filled (percent-encoded) and its query, if any. */
export function pathTo<R extends RouteName>(route: R, params: RouteParams<R>, query: Query | URLSearchParams = {}): string {
  const path = ROUTES[route].path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent((params as Record<string, string>)[name]));
  const search =
    query instanceof URLSearchParams
      ? query
      : new URLSearchParams(Object.entries(query).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]])));
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/** A request's route and its parameters, from its method and its decoded path segments; undefined when none matches. */
export function matchRoute(method: string, segments: readonly string[]): { route: RouteName; params: Record<string, string> } | undefined {
  for (const [route, r] of Object.entries(ROUTES) as [RouteName, (typeof ROUTES)[RouteName]][]) {
    if (r.method !== method) continue;
    const pattern = r.path.split('/').filter(Boolean);
    if (pattern.length !== segments.length || !pattern.every((p, i) => p.startsWith(':') || p === segments[i])) continue;
    return { route, params: Object.fromEntries(pattern.flatMap((p, i) => (p.startsWith(':') ? [[p.slice(1), segments[i]]] : []))) };
  }
  return undefined;
}
