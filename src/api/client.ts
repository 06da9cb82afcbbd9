/**
 * A typed client of braid's HTTP API: each route's request and its reply, the records runtime/wire/ declares
 * for the server. The CLI's commands use it when another process (braid worker, braid dev) holds the embedded
 * database. Every request has a deadline; a reply of 400 or more is an ApiError with the server's code.
 */

import type { BaselineVersion } from '../deploy/baseline.js';
import type { UpgradeReport, UpgradeRequest } from '../runtime/deploys/upgrades.js';
import type { RetryMode } from '../runtime/engine/decide.js';
import type { RetryResult } from '../runtime/engine/retry.js';
import type { BulkCreated } from '../runtime/incidents/bulk.js';
import type { TaskActionResult } from '../runtime/incidents/task-actions.js';
import type { TaskAction } from '../runtime/incidents/task-decide.js';
import type { StoredDefinition } from '../runtime/sql/definitions.js';
import type { EmitOptions, EmitResult } from '../runtime/waits/signals.js';
import type {
  AuditRecord,
  BulkOperation,
  CallbackLinkUrl,
  EmitEventResult,
  EventRecord,
  LogPage,
  PauseRecord,
  PauseScope,
  ScheduleRecord,
  ScheduleStart,
  StreamChunk,
  WaitDiagnostics,
  WorkflowPage,
  WorkflowRecord,
  WorkflowSearch,
  WorkflowStatus,
} from '../runtime/wire/index.js';
import {
  type BulkBody,
  pathTo,
  type Query,
  ROUTES,
  type RouteBodies,
  type RouteName,
  type RouteParams,
  type RouteReplies,
  type TaskActionBody,
  type WorkflowVersion,
} from './route-table.js';
import { searchToParams } from './search-params.js';

export type { WorkflowVersion } from './route-table.js';

export type ListFilter = WorkflowSearch;

/** The server answered with an error: its status, its error code (error-codes.ts) and its message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly diagnostics?: unknown[],
    /** A batch start's row at fault (from 0). */
    readonly row?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** No answer: the process is gone, the address refuses, or the reply did not come within the deadline. */
export class ApiUnreachableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ApiUnreachableError';
  }
}

/** The events of a server-sent event stream, as they arrive. */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const part of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(part, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0) yield { event, data: data.join('\n') };
    }
  }
}

/** How long a request may take, beyond what a long poll asks the server to wait. */
const REQUEST_DEADLINE_MS = 30_000;
/** The longest a `wait` long poll asks for in one request. */
const LONG_POLL_MS = 60_000;

export class ApiClient {
  constructor(
    readonly url: string,
    private readonly token: string,
    /** Who acts and why, sent with each change (the server records its signed-in user; the bootstrap admin's is this actor). */
    private readonly who: { actor?: string; reason?: string } = {},
  ) {}

  start(name: string, inputs: unknown, options: { id?: string; traceparent?: string } = {}): Promise<{ id: string; existing: boolean }> {
    const body = { name, inputs, ...(options.id !== undefined ? { id: options.id } : {}) };
    return this.call('start', {}, { body, traceparent: options.traceparent }).then((r) => ({ id: r.id, existing: r.existing === true }));
  }

  /** Starts a batch of workflows of `name`, all or nothing (POST /api/workflows/batch). */
  startMany(name: string, rows: readonly { inputs: unknown; id?: string }[]): Promise<{ id: string; existing: boolean }[]> {
    return this.call('startBatch', {}, { body: { name, workflows: rows } }).then((r) => r.workflows);
  }

  status(id: string, reveal = false): Promise<WorkflowStatus> {
    return this.call('status', { id }, { query: { reveal: reveal ? 1 : undefined } });
  }

  logs(id: string, options: { task?: string; attempt?: number; after?: string; limit?: number }): Promise<LogPage> {
    return this.call('logs', { id }, { query: { task: options.task, attempt: options.attempt, after: options.after, limit: options.limit } });
  }

  schedules(workflow?: string, shown: { next?: number; runs?: number } = {}): Promise<ScheduleRecord[]> {
    return this.call('schedules', {}, { query: { workflow, next: shown.next, runs: shown.runs } }).then((r) => r.schedules);
  }

  schedule(workflow: string, schedule: string, action: 'pause' | 'resume'): Promise<ScheduleRecord> {
    return this.call(action, { workflow, schedule }, { body: {} });
  }

  pauses(): Promise<PauseRecord[]> {
    return this.call('pauses', {}).then((r) => r.pauses);
  }

  /** Pauses (`pause`) or resumes a queue, a kind or a workflow name. */
  setPause(action: 'pause' | 'resume', scope: PauseScope, target: string, who: { actor?: string; reason?: string }): Promise<PauseRecord> {
    return this.call(action === 'pause' ? 'pauseScope' : 'resumeScope', {}, { body: { scope, target, ...who } });
  }

  bulkCreate(body: BulkBody): Promise<BulkCreated> {
    return this.call('bulkCreate', {}, { body });
  }

  bulkList(): Promise<BulkOperation[]> {
    return this.call('bulkList', {}).then((r) => r.operations);
  }

  bulkStatus(name: string): Promise<BulkOperation> {
    return this.call('bulkStatus', { name });
  }

  bulkCancel(name: string, who: { actor?: string; reason?: string }): Promise<BulkOperation> {
    return this.call('bulkCancel', { name }, { body: who });
  }

  /** An operator's action on one task (braid task retry|skip|complete). */
  taskAction(id: string, task: string, action: TaskAction, body: TaskActionBody & { output?: unknown }): Promise<TaskActionResult> {
    const route = ({ retry: 'taskRetry', skip: 'taskSkip', complete: 'taskComplete' } as const)[action];
    return this.call(route, { id, task }, { body });
  }

  trigger(workflow: string, schedule: string): Promise<ScheduleStart> {
    return this.call('trigger', { workflow, schedule }, { body: {} });
  }

  backfill(workflow: string, schedule: string, from: Date, to: Date, dryRun: boolean): Promise<ScheduleStart[]> {
    const body = { from: from.toISOString(), to: to.toISOString(), dry_run: dryRun };
    return this.call('backfill', { workflow, schedule }, { body }).then((r) => r.runs);
  }

  cancel(id: string): Promise<{ cancelled: string[]; stopping: string[] }> {
    return this.call('cancel', { id }, { body: {} });
  }

  signal(id: string, key: string, payload: unknown, options: EmitOptions): Promise<EmitResult> {
    const body = {
      key,
      payload,
      ...(options.idempotencyKey !== undefined ? { idempotency_key: options.idempotencyKey } : {}),
      ...(options.source !== undefined ? { source: options.source } : {}),
      ...(options.attempt !== undefined ? { attempt: options.attempt } : {}),
      ...(options.anyKey ? { any_key: true } : {}),
    };
    return this.call('emit', { id }, { body, traceparent: options.traceparent });
  }

  /** A new attempt of a finalized workflow; without a mode, the server's default (failed_and_downstream). */
  retry(id: string, options: { mode?: RetryMode; resetHistory?: boolean; onCurrent?: boolean } = {}): Promise<RetryResult> {
    return this.call('retry', { id }, { body: { mode: options.mode, reset_history: options.resetHistory === true, on_current: options.onCurrent === true } });
  }

  upgrade(name: string, request: UpgradeRequest): Promise<UpgradeReport> {
    const body = {
      from: request.from,
      to: request.to,
      ids: request.ids,
      dry_run: request.dryRun === true,
      cancel_removed: request.cancelRemoved === true,
      drop_evidence: request.dropEvidence === true,
    };
    return this.call('upgrade', { name }, { body });
  }

  version(name: string, hash?: string): Promise<StoredDefinition> {
    return this.call('definition', { name }, { query: { hash: hash || undefined } });
  }

  versions(name: string): Promise<WorkflowVersion[]> {
    return this.call('versions', { name });
  }

  audit(filter: { actor?: string; action?: string; target?: string; since?: string; limit?: number }): Promise<AuditRecord[]> {
    return this.call('audit', {}, { query: filter }).then((r) => r.lines);
  }

  emitEvent(name: string, payload: unknown, id?: string): Promise<EmitEventResult> {
    return this.call('emitEvent', {}, { body: { name, payload, ...(id !== undefined ? { id } : {}) } });
  }

  listEvents(filter: { name?: string; limit?: number; before?: string }): Promise<EventRecord[]> {
    return this.call('eventList', {}, { query: filter }).then((r) => r.events);
  }

  /**
   * A task's output stream as its server-sent events, each chunk to `onChunk`; with `follow`, until the task has
   * ended. Resolves with the task's state at the end (null when not following).
   */
  async followStream(id: string, task: string, name: string, follow: boolean, onChunk: (c: StreamChunk) => void): Promise<string | null> {
    const path = pathTo('taskStream', { id, task, name }, follow ? {} : { follow: 0 });
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, { headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' } });
    } catch (error) {
      throw new ApiUnreachableError(`${(error as Error).message}`);
    }
    if (!res.ok || !res.body) {
      const body = (await res.json().catch(() => ({}))) as { error?: string; code?: string };
      throw new ApiError(res.status, body.error ?? `HTTP ${res.status}`, body.code);
    }
    let state: string | null = null;
    for await (const e of serverSentEvents(res.body)) {
      if (e.event === 'chunk') onChunk(JSON.parse(e.data) as StreamChunk);
      else if (e.event === 'end') state = (JSON.parse(e.data) as { state: string }).state;
      else if (e.event === 'error') throw new ApiError(500, (JSON.parse(e.data) as { error: string }).error, 'internal');
    }
    return state;
  }

  /** A callback term's links, answered by this server (unless the runtime knows its public URL). */
  callbackLinks(id: string, task: string, term: string): Promise<CallbackLinkUrl[]> {
    return this.call('callbackLinks', { id, task, term }).then((r) => r.links);
  }

  diagnose(id: string, task: string, options: { signalScanLimit?: number } = {}): Promise<WaitDiagnostics> {
    return this.call('diagnostics', { id, task }, { query: { signal_scan_limit: options.signalScanLimit } });
  }

  /** Waits until the workflow is final or `timeoutMs` passed, in long polls of at most a minute; returns it as it is then. */
  async waitFinal(id: string, timeoutMs: number): Promise<WorkflowRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const wait = Math.min(LONG_POLL_MS, Math.max(0, deadline - Date.now()));
      const { workflow } = await this.call('wait', { id }, { query: { timeout_ms: wait }, waitsMs: wait });
      if (workflow.state !== 'running' || Date.now() >= deadline) return workflow;
    }
  }

  async deployBaseline(names?: readonly string[], options: { started?: boolean } = {}): Promise<BaselineVersion[]> {
    const query = { names: names?.join(','), started: options.started ? '1' : undefined };
    return (await this.call('baseline', {}, { query })).versions;
  }

  list(filter: ListFilter): Promise<WorkflowPage> {
    return this.call('workflows', {}, { query: searchToParams(filter) });
  }

  /** One request to a route of the table, with a deadline (beyond what a long poll asks the server to wait). */
  private async call<R extends RouteName>(
    route: R,
    params: RouteParams<R>,
    o: { query?: Query | URLSearchParams; body?: R extends keyof RouteBodies ? RouteBodies[R] : never; waitsMs?: number; traceparent?: string } = {},
  ): Promise<RouteReplies[R]> {
    const { method } = ROUTES[route];
    const path = pathTo(route, params, o.query);
    const { waitsMs = 0, traceparent } = o;
    const payload = o.body !== undefined && method === 'POST' && route !== 'emitNamedEvent' ? { ...this.who, ...(o.body as object) } : o.body;
    let res: Response;
    let body: RouteReplies[R] & { error?: string; code?: string; diagnostics?: unknown[]; row?: number };
    try {
      res = await fetch(`${this.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(traceparent !== undefined ? { traceparent } : {}),
        },
        body: payload !== undefined ? JSON.stringify(payload) : undefined,
        signal: AbortSignal.timeout(REQUEST_DEADLINE_MS + waitsMs),
      });
      body = (await res.json()) as typeof body;
    } catch (error) {
      throw new ApiUnreachableError(
        (error as Error).name === 'TimeoutError' ? `no reply within ${(REQUEST_DEADLINE_MS + waitsMs) / 1000} s` : (error as Error).message,
      );
    }
    if (res.status >= 300) throw new ApiError(res.status, body.error ?? `status ${res.status}`, body.code, body.diagnostics, body.row);
    return body;
  }
}
