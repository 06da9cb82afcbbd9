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

import { BODIES, type BodySchema } from './route-inputs.js';

/** Where the API's paths begin (the rest of a server's paths are the web UI's). */
export const API_PREFIX = '/api';

/**
 * How a route meets a user limited to some workflow names (braid users add --workflows billing_*):
 * - none: it reads and changes nothing of any workflow (who the caller is, a session);
 * - workflow: the workflow its :id names must be in the scope (else 403);
 * - name: the workflow name its :name (or :workflow) names must be in the scope;
 * - body: the workflow name its body names must be in the scope (the handler checks it, with checkName);
 * - filtered: a list across names, of which the caller sees only those in the scope;
 * - across: it reads or acts across names (an event starts any workflow, a bulk operation selects any): refused.
 */
export type RouteScope = 'none' | 'workflow' | 'name' | 'body' | 'filtered' | 'across';

/**
 * Every operation of the API, declared once: its method and path, its body's schema (a change's), the role it needs (reads a viewer, changes an
 * operator, deploys and schedules an admin; a callback term's links, which answer for it, an operator) and how it
 * meets a scoped user. The server authorizes every request by this table before a handler runs (scope.ts), and
 * the access tests are generated from it.
 */
export const ROUTES = {
  session: { method: 'POST', path: '/api/session', role: 'viewer', scope: 'none', body: BODIES.session },
  me: { method: 'GET', path: '/api/me', role: 'viewer', scope: 'none' },
  audit: { method: 'GET', path: '/api/audit', role: 'viewer', scope: 'filtered' },
  events: { method: 'GET', path: '/api/events', role: 'viewer', scope: 'filtered' },
  emitEvent: { method: 'POST', path: '/api/events', role: 'operator', scope: 'across', audit: 'event.emit', body: BODIES.emitEvent },
  eventList: { method: 'GET', path: '/api/events/recent', role: 'viewer', scope: 'across' },
  emitNamedEvent: { method: 'POST', path: '/api/events/:name', role: 'operator', scope: 'across', audit: 'event.emit', body: BODIES.emitNamedEvent },
  dev: { method: 'GET', path: '/api/dev', role: 'viewer', scope: 'across' },
  baseline: { method: 'GET', path: '/api/deploy/baseline', role: 'viewer', scope: 'filtered' },
  definitions: { method: 'GET', path: '/api/definitions', role: 'viewer', scope: 'filtered' },
  register: { method: 'POST', path: '/api/definitions', role: 'admin', scope: 'across', audit: 'definition.register', body: BODIES.register },
  definition: { method: 'GET', path: '/api/definitions/:name', role: 'viewer', scope: 'name' },
  versions: { method: 'GET', path: '/api/definitions/:name/versions', role: 'viewer', scope: 'name' },
  diff: { method: 'GET', path: '/api/definitions/:name/diff', role: 'viewer', scope: 'name' },
  upgrade: { method: 'POST', path: '/api/definitions/:name/upgrade', role: 'admin', scope: 'name', audit: 'workflow.upgrade', body: BODIES.upgrade },
  schedules: { method: 'GET', path: '/api/schedules', role: 'viewer', scope: 'filtered' },
  schedule: { method: 'GET', path: '/api/schedules/:workflow/:schedule', role: 'viewer', scope: 'name' },
  pause: { method: 'POST', path: '/api/schedules/:workflow/:schedule/pause', role: 'admin', scope: 'name', audit: 'schedule.pause', body: BODIES.pause },
  resume: { method: 'POST', path: '/api/schedules/:workflow/:schedule/resume', role: 'admin', scope: 'name', audit: 'schedule.resume', body: BODIES.resume },
  trigger: {
    method: 'POST',
    path: '/api/schedules/:workflow/:schedule/trigger',
    role: 'admin',
    scope: 'name',
    audit: 'schedule.trigger',
    body: BODIES.trigger,
  },
  backfill: {
    method: 'POST',
    path: '/api/schedules/:workflow/:schedule/backfill',
    role: 'admin',
    scope: 'name',
    audit: 'schedule.backfill',
    body: BODIES.backfill,
  },
  pauses: { method: 'GET', path: '/api/pauses', role: 'viewer', scope: 'filtered' },
  pauseScope: { method: 'POST', path: '/api/pauses', role: 'operator', scope: 'across', audit: 'pause', body: BODIES.pauseScope },
  resumeScope: { method: 'POST', path: '/api/pauses/resume', role: 'operator', scope: 'across', audit: 'resume', body: BODIES.resumeScope },
  bulkList: { method: 'GET', path: '/api/bulk', role: 'viewer', scope: 'across' },
  bulkCreate: { method: 'POST', path: '/api/bulk', role: 'operator', scope: 'across', audit: 'bulk.*', body: BODIES.bulkCreate },
  bulkStatus: { method: 'GET', path: '/api/bulk/:name', role: 'viewer', scope: 'across' },
  bulkCancel: { method: 'POST', path: '/api/bulk/:name/cancel', role: 'operator', scope: 'across', audit: 'bulk.cancel', body: BODIES.bulkCancel },
  workflows: { method: 'GET', path: '/api/workflows', role: 'viewer', scope: 'filtered' },
  start: { method: 'POST', path: '/api/workflows', role: 'operator', scope: 'body', audit: 'workflow.start', body: BODIES.start },
  startBatch: { method: 'POST', path: '/api/workflows/batch', role: 'operator', scope: 'body', audit: 'workflow.start', body: BODIES.startBatch },
  status: { method: 'GET', path: '/api/workflows/:id', role: 'viewer', scope: 'workflow' },
  workflowEvents: { method: 'GET', path: '/api/workflows/:id/events', role: 'viewer', scope: 'workflow' },
  cancel: { method: 'POST', path: '/api/workflows/:id/cancel', role: 'operator', scope: 'workflow', audit: 'workflow.cancel', body: BODIES.cancel },
  retry: { method: 'POST', path: '/api/workflows/:id/retry', role: 'operator', scope: 'workflow', audit: 'workflow.retry', body: BODIES.retry },
  emit: { method: 'POST', path: '/api/workflows/:id/signals', role: 'operator', scope: 'workflow', audit: 'signal', body: BODIES.emit },
  signals: { method: 'GET', path: '/api/workflows/:id/signals', role: 'viewer', scope: 'workflow' },
  logs: { method: 'GET', path: '/api/workflows/:id/logs', role: 'viewer', scope: 'workflow' },
  wait: { method: 'GET', path: '/api/workflows/:id/wait', role: 'viewer', scope: 'workflow' },
  diagnostics: { method: 'GET', path: '/api/workflows/:id/tasks/:task/diagnostics', role: 'viewer', scope: 'workflow' },
  taskSignals: { method: 'GET', path: '/api/workflows/:id/tasks/:task/signals', role: 'viewer', scope: 'workflow' },
  taskRetry: { method: 'POST', path: '/api/workflows/:id/tasks/:task/retry', role: 'operator', scope: 'workflow', audit: 'task.retry', body: BODIES.taskRetry },
  taskSkip: { method: 'POST', path: '/api/workflows/:id/tasks/:task/skip', role: 'operator', scope: 'workflow', audit: 'task.skip', body: BODIES.taskSkip },
  taskComplete: {
    method: 'POST',
    path: '/api/workflows/:id/tasks/:task/complete',
    role: 'operator',
    scope: 'workflow',
    audit: 'task.complete',
    body: BODIES.taskComplete,
  },
  callbackLinks: { method: 'GET', path: '/api/workflows/:id/tasks/:task/callbacks/:term', role: 'operator', scope: 'workflow' },
  workflowEvent: { method: 'GET', path: '/api/workflows/:id/event', role: 'viewer', scope: 'workflow' },
  taskStreams: { method: 'GET', path: '/api/workflows/:id/tasks/:task/streams', role: 'viewer', scope: 'workflow' },
  taskStream: { method: 'GET', path: '/api/workflows/:id/tasks/:task/streams/:name', role: 'viewer', scope: 'workflow' },
} as const satisfies Record<string, OperationContract>;

export type RouteName = keyof typeof ROUTES;

/**
 * What the contract declares of an operation: how it is asked for, who may, how a scoped user meets it, and the
 * audit action a change it makes is recorded under (`bulk.*`: the operation's own action).
 */
export type OperationContract = { path: string; role: Role; scope: RouteScope; audit?: string } & (
  | { method: 'GET' }
  // a change declares what its body takes (route-inputs.ts): the server holds every body to it before the handler runs
  | { method: 'POST'; body: BodySchema }
);

/** The server's operations outside the API: the Prometheus scrape, whose series count every workflow name. */
export const SERVER_ROUTES = {
  metrics: { method: 'GET', path: '/metrics', role: 'admin', scope: 'across' },
} as const satisfies Record<string, OperationContract>;

/** The role a route needs. */
export function roleFor(route: RouteName): Role {
  return ROUTES[route].role;
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
  /** What it would do (the tasks that would run, be skipped, fail), with nothing changed. */
  dry_run?: boolean;
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
  callbackLinks: { links: CallbackLinkUrl[]; description: string | null };
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
