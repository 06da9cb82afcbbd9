/**
 * A typed client of braid's HTTP API: each route's request and its reply, the records runtime/wire/ declares
 * for the server. The CLI's commands use it when another process (braid worker, braid dev) holds the embedded
 * database. Every request has a deadline; a reply of 400 or more is an ApiError with the server's code.
 */
import type { BaselineVersion } from '../deploy/baseline.js';
import type { DrainState } from '../runtime/deploys/in-flight.js';
import type { UpgradeReport, UpgradeRequest } from '../runtime/deploys/upgrades.js';
import type { RetryMode } from '../runtime/engine/decide.js';
import type { RetryResult } from '../runtime/engine/retry.js';
import type { DefinitionVersion, StoredDefinition } from '../runtime/sql/definitions.js';
import type { EmitOptions, EmitResult } from '../runtime/waits/signals.js';
import type {
  LogPage,
  ScheduleRecord,
  ScheduleStart,
  WaitDiagnostics,
  WorkflowPage,
  WorkflowRecord,
  WorkflowSearch,
  WorkflowStatus,
} from '../runtime/wire/index.js';
import { searchToParams } from './search-params.js';

/** One version of a definition, with the workflows still running on it and whether it drains. */
export type WorkflowVersion = DefinitionVersion & { running: number; state: DrainState };

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

/** How long a request may take, beyond what a long poll asks the server to wait. */
const REQUEST_DEADLINE_MS = 30_000;
/** The longest a `wait` long poll asks for in one request. */
const LONG_POLL_MS = 60_000;

const at = (id: string) => `/api/workflows/${encodeURIComponent(id)}`;
const scheduleAt = (workflow: string, schedule: string) => `/api/schedules/${encodeURIComponent(workflow)}/${encodeURIComponent(schedule)}`;

export class ApiClient {
  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  start(name: string, inputs: unknown, options: { id?: string; traceparent?: string } = {}): Promise<{ id: string; existing: boolean }> {
    return this.call<{ id: string; existing?: boolean }>(
      'POST',
      '/api/workflows',
      { name, inputs, ...(options.id !== undefined ? { id: options.id } : {}) },
      0,
      options.traceparent,
    ).then((r) => ({ id: r.id, existing: r.existing === true }));
  }

  /** Starts a batch of workflows of `name`, all or nothing (POST /api/workflows/batch). */
  startMany(name: string, rows: readonly { inputs: unknown; id?: string }[]): Promise<{ id: string; existing: boolean }[]> {
    return this.call<{ workflows: { id: string; existing: boolean }[] }>('POST', '/api/workflows/batch', { name, workflows: rows }).then((r) => r.workflows);
  }

  status(id: string): Promise<WorkflowStatus> {
    return this.call('GET', at(id));
  }

  logs(id: string, options: { task?: string; attempt?: number; after?: string; limit?: number }): Promise<LogPage> {
    const q = new URLSearchParams();
    if (options.task !== undefined) q.set('task', options.task);
    if (options.attempt !== undefined) q.set('attempt', String(options.attempt));
    if (options.after !== undefined) q.set('after', options.after);
    if (options.limit !== undefined) q.set('limit', String(options.limit));
    const query = q.toString();
    return this.call('GET', `${at(id)}/logs${query ? `?${query}` : ''}`);
  }

  schedules(workflow?: string, shown: { next?: number; runs?: number } = {}): Promise<ScheduleRecord[]> {
    const q = new URLSearchParams();
    if (workflow !== undefined) q.set('workflow', workflow);
    if (shown.next !== undefined) q.set('next', String(shown.next));
    if (shown.runs !== undefined) q.set('runs', String(shown.runs));
    return this.call<{ schedules: ScheduleRecord[] }>('GET', `/api/schedules?${q}`).then((r) => r.schedules);
  }

  schedule(workflow: string, schedule: string, action: 'pause' | 'resume'): Promise<ScheduleRecord> {
    return this.call('POST', `${scheduleAt(workflow, schedule)}/${action}`, {});
  }

  trigger(workflow: string, schedule: string): Promise<ScheduleStart> {
    return this.call('POST', `${scheduleAt(workflow, schedule)}/trigger`, {});
  }

  backfill(workflow: string, schedule: string, from: Date, to: Date, dryRun: boolean): Promise<ScheduleStart[]> {
    const body = { from: from.toISOString(), to: to.toISOString(), dry_run: dryRun };
    return this.call<{ runs: ScheduleStart[] }>('POST', `${scheduleAt(workflow, schedule)}/backfill`, body).then((r) => r.runs);
  }

  cancel(id: string): Promise<{ cancelled: string[]; stopping: string[] }> {
    return this.call('POST', `${at(id)}/cancel`, {});
  }

  signal(id: string, key: string, payload: unknown, options: EmitOptions): Promise<EmitResult> {
    return this.call(
      'POST',
      `${at(id)}/signals`,
      {
        key,
        payload,
        ...(options.idempotencyKey !== undefined ? { idempotency_key: options.idempotencyKey } : {}),
        ...(options.source !== undefined ? { source: options.source } : {}),
        ...(options.attempt !== undefined ? { attempt: options.attempt } : {}),
        ...(options.anyKey ? { any_key: true } : {}),
      },
      0,
      options.traceparent,
    );
  }

  retry(id: string, options: { mode: RetryMode; resetHistory: boolean; onCurrent?: boolean }): Promise<RetryResult> {
    return this.call('POST', `${at(id)}/retry`, { mode: options.mode, reset_history: options.resetHistory, on_current: options.onCurrent === true });
  }

  upgrade(name: string, request: UpgradeRequest): Promise<UpgradeReport> {
    return this.call('POST', `/api/definitions/${encodeURIComponent(name)}/upgrade`, {
      from: request.from,
      to: request.to,
      ids: request.ids,
      dry_run: request.dryRun === true,
      cancel_removed: request.cancelRemoved === true,
      drop_evidence: request.dropEvidence === true,
    });
  }

  version(name: string, hash?: string): Promise<StoredDefinition> {
    return this.call('GET', `/api/definitions/${encodeURIComponent(name)}${hash ? `?hash=${encodeURIComponent(hash)}` : ''}`);
  }

  versions(name: string): Promise<WorkflowVersion[]> {
    return this.call('GET', `/api/definitions/${encodeURIComponent(name)}/versions`);
  }

  diagnose(id: string, task: string, options: { signalScanLimit?: number } = {}): Promise<WaitDiagnostics> {
    const limit = options.signalScanLimit !== undefined ? `?signal_scan_limit=${options.signalScanLimit}` : '';
    return this.call('GET', `${at(id)}/tasks/${encodeURIComponent(task)}/diagnostics${limit}`);
  }

  /** Waits until the workflow is final or `timeoutMs` passed, in long polls of at most a minute; returns it as it is then. */
  async waitFinal(id: string, timeoutMs: number): Promise<WorkflowRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const wait = Math.min(LONG_POLL_MS, Math.max(0, deadline - Date.now()));
      const { workflow } = await this.call<{ workflow: WorkflowRecord }>('GET', `${at(id)}/wait?timeout_ms=${wait}`, undefined, wait);
      if (workflow.state !== 'running' || Date.now() >= deadline) return workflow;
    }
  }

  async deployBaseline(names?: readonly string[], options: { started?: boolean } = {}): Promise<BaselineVersion[]> {
    const params = new URLSearchParams();
    if (names) params.set('names', names.join(','));
    if (options.started) params.set('started', '1');
    const query = params.size > 0 ? `?${params}` : '';
    return (await this.call<{ versions: BaselineVersion[] }>('GET', `/api/deploy/baseline${query}`)).versions;
  }

  list(filter: ListFilter): Promise<WorkflowPage> {
    return this.call('GET', `/api/workflows?${searchToParams(filter)}`);
  }

  private async call<T>(method: 'GET' | 'POST', path: string, payload?: unknown, waitsMs = 0, traceparent?: string): Promise<T> {
    let res: Response;
    let body: T & { error?: string; code?: string; diagnostics?: unknown[]; row?: number };
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
