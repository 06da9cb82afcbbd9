/**
 * Records as the API serves them, defined once for the server, the API client, the web UI and the public
 * types (src/ui/app imports it: beside types, only small pure functions and pretty-ms). `Json<T>` is a record as it
 * arrives over HTTP: dates as ISO strings. Wait progress and evidence are stored as they are served.
 */

import prettyMs from 'pretty-ms';
import type { PlanFlow } from '../../compiler/flow.js';
import type { PlanWait } from '../../compiler/plan.js';
import type { AuditRecord, PauseRecord } from './operations.js';

/** The most rows one batch start takes (startMany, POST /api/workflows/batch): one statement carries them all. */
export const MAX_START_BATCH = 10_000;

export type TaskState = 'pending' | 'scheduled' | 'available' | 'running' | 'retryable' | 'completed' | 'cancelled' | 'discarded' | 'skipped';
/** skipped: its condition was false (or a dep was skipped): final, and not a failure. */
export type FinalState = 'completed' | 'cancelled' | 'discarded' | 'skipped';

/** Whether a task's state is final (sql/rules.ts isFinalSql; engine/decide.ts decides with it). */
export function isFinal(state: string): state is FinalState {
  return state === 'completed' || state === 'cancelled' || state === 'discarded' || state === 'skipped';
}

/** A workflow's states, in the order lists show them. */
export const WORKFLOW_STATES = ['running', 'completed', 'failed', 'cancelled'] as const;
export type WorkflowState = (typeof WORKFLOW_STATES)[number];

export interface WorkflowRecord {
  id: string;
  name: string;
  definition_hash: string;
  state: WorkflowState;
  attempt: number;
  inputs: unknown;
  output: unknown;
  output_error: string | null;
  tasks_total: number;
  tasks_open: number;
  tasks_failed: number;
  cancel_requested: boolean;
  /** Why it ended when its state alone does not say: 'timeout' (it failed because its timeout elapsed first). */
  end_reason: string | null;
  /** When the current attempt times out (its definition sets a timeout), else null. */
  deadline_at: Date | null;
  parent_id: string | null;
  group_name: string | null;
  /** The schedule whose tick started it (its id is then NAME:SCHEDULE:TICK). */
  schedule: string | null;
  /** A debounced run's quiet period's end: a start with the same key before then replaces its inputs (null otherwise). */
  debounce_until: Date | null;
  created_at: Date;
  finalized_at: Date | null;
}

/** One row of the workflow list: the workflow and its tasks counted by state. */
export interface WorkflowSummary {
  id: string;
  name: string;
  definition_hash: string;
  state: WorkflowState;
  attempt: number;
  tasks_total: number;
  task_counts: Record<string, number>;
  parent_id: string | null;
  created_at: Date;
  finalized_at: Date | null;
}

export type Json<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

export interface SignalRow {
  /** bigint ids travel as decimal strings. */
  id: string;
  attempt: number;
  key: string;
  payload: unknown;
  source: unknown;
  idempotency_key: string | null;
  created_at: Date;
}

/**
 * A signal term's progress: the ids that counted (at most `count`), the last id scanned, the last predicate
 * error; with `distinct`, the values counted so far (canonical JSON), in the order they came.
 */
export interface SignalTermProgress {
  cursor: string;
  matched: string[];
  distinct?: string[];
  error?: string;
}

export type TermKind = 'signal' | 'timer' | 'expr' | 'workflows';

export interface TermValue {
  name: string;
  kind: TermKind;
  label?: string;
  value: boolean;
  /** Why the term could not be evaluated (it then counts as false). */
  error?: string;
  matched?: number;
  required?: number;
  /** A signal term that counts distinct values (`distinct:`): the values counted, in the order they came. */
  distinct?: unknown[];
  signal_ids?: string[];
  fire_at?: string | null;
  fired?: boolean;
  /** workflows terms: the awaited ids, how many completed and failed, and the decided outcome. */
  outcome?: WorkflowsOutcome;
  ids?: string[];
  completed?: number;
  failed?: number;
  on_failure?: 'cancel' | 'continue';
}

/**
 * A signal term's count as every view says it (status, diagnose, the UI): `1/2`, or with `distinct`,
 * `1/2 distinct (grace)` with the values counted.
 */
export function signalCountText(t: Pick<TermValue, 'matched' | 'required' | 'distinct'>): string {
  const count = `${t.matched ?? 0}/${t.required ?? 1}`;
  if (t.distinct === undefined) return count;
  const values = t.distinct.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
  return `${count} distinct${values.length > 0 ? ` (${values.join(', ')})` : ''}`;
}

/**
 * A task's attempt as every view says it: `2/5`; past max_attempts (a workflow retry without reset_history
 * runs a task once more after its budget was spent) `6 (max 5, retried)`, not `6/5`.
 */
export function attemptText(attempt: number, maxAttempts: number): string {
  return attempt <= maxAttempts ? `${attempt}/${maxAttempts}` : `${attempt} (max ${maxAttempts}, retried)`;
}

/** A duration as people read it, everywhere braid shows one: 850ms, 12.3s, 4m 5s, 2h 10m, 2d (pretty-ms); `roughly`, its largest unit only. */
export function humanDuration(ms: number, roughly = false): string {
  return prettyMs(Math.max(0, ms), roughly ? { unitCount: 1 } : {});
}

/** One attempt of a task, as its timeline shows it. */
export interface AttemptSpan {
  attempt: number;
  started_at: string | null;
  /** null while it runs. */
  ended_at: string | null;
  worker: string | null;
  /** completed, running, or how it ended otherwise (error, timeout, lost, cancel, shutdown, output). */
  outcome: string;
  message: string | null;
}

/** A task's attempts, oldest first: those that did not complete (its errors), then the current one. */
export function attemptHistory(
  t: Pick<TaskRecord, 'attempt' | 'state' | 'errors' | 'worker_id' | 'completed_by'> & { started_at: Date | string | null; finalized_at: Date | string | null },
): AttemptSpan[] {
  const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
  const spans: AttemptSpan[] = t.errors.map((e) => ({
    attempt: e.attempt,
    started_at: e.started_at ?? null,
    ended_at: e.at,
    worker: e.worker ?? null,
    outcome: e.code ?? e.kind ?? 'error',
    message: e.message,
  }));
  const last = t.errors.at(-1);
  // the current attempt, unless its end is the last error (a task retrying, discarded or cancelled by it)
  const endedByError = last !== undefined && last.attempt === t.attempt && t.state !== 'running' && t.state !== 'completed';
  if (t.attempt > 0 && t.started_at !== null && !endedByError)
    spans.push({
      attempt: t.attempt,
      started_at: iso(t.started_at),
      ended_at: t.state === 'running' ? null : iso(t.finalized_at),
      worker: t.worker_id ?? t.completed_by,
      outcome: t.state,
      message: null,
    });
  return spans;
}

export interface AwaitedWorkflow {
  id: string;
  /** null: no such workflow yet (a child not started yet, or an id that never existed). */
  state: string | null;
  output: unknown;
}

export type WorkflowsOutcome = 'satisfied' | 'failed' | 'undecided';

export type WaitPhase = 'pending_deps' | 'waiting' | 'resolved' | 'abandoned';

/** What evaluation keeps between runs (tasks.wait_progress). */
export interface WaitProgressRecord {
  signal_terms: Record<string, SignalTermProgress>;
  /** Each workflows term's ids (resolved when the wait became active) and, once decided, its outcome for good. */
  workflow_terms?: Record<string, { ids: string[]; decided?: 'satisfied' | 'failed'; error?: string }>;
  last: { at: string; result: boolean; error?: string; terms: TermValue[]; truncated?: boolean };
}

/** The snapshot stored when a wait resolves (tasks.wait_evidence). */
export interface WaitEvidence {
  phase: 'resolved';
  started_at: string;
  resolved_at: string;
  expr: string;
  result: true;
  terms: TermValue[];
  inputs: {
    signals: Record<string, string[]>;
    timers: Record<string, { fire_at: string | null; fired: boolean }>;
    deps: Record<string, unknown>;
    /** Awaited workflows per workflows term: their states (and outputs, once completed). */
    workflows: Record<string, AwaitedWorkflow[]>;
  };
  /** Every signal id the evaluation used. */
  signal_ids: string[];
  /** The workflow's last signal id when the wait resolved: task-scoped reads stop here. */
  boundary: string;
}

export interface TaskRecord {
  workflow_id: string;
  name: string;
  template: string;
  idx: number | null;
  key: string | null;
  kind: string;
  queue: string;
  priority: number;
  state: string;
  attempt: number;
  max_attempts: number;
  args: unknown;
  output: unknown;
  /** Each attempt that did not complete, oldest first: when it started and ended, the worker that ran it, why. */
  errors: {
    attempt: number;
    at: string;
    started_at?: string;
    worker?: string;
    message: string;
    kind?: string;
    code?: string;
    name?: string;
    stack?: string;
    /** Why the task ended with attempts left: what made this failure one that is not retried. */
    not_retried?: string;
  }[];
  deps: string[];
  dependents: string[];
  deps_left: number;
  scheduled_at: Date;
  timeout_ms: number | null;
  /** The wait, its phase, its last evaluation and (once resolved) its evidence; null for a task without one. */
  wait: WaitSnapshot | null;
  start: unknown;
  metadata: unknown;
  description: string | null;
  /** The task's condition (raw CEL), and what it decided: null until decided (or without one). */
  when: string | null;
  when_met: boolean | null;
  cancel_requested: boolean;
  worker_id: string | null;
  /** The worker that ran its completed attempt. */
  completed_by: string | null;
  created_at: Date;
  started_at: Date | null;
  finalized_at: Date | null;
  /** Its flow control, keys and counts resolved (null without any). */
  flow: PlanFlow | null;
  /** The version that removed it, when a move kept it as history (it had ended, or --cancel-removed ended it). */
  removed_in: string | null;
  /** The data keys its sealed values need: only a worker given them claims it (null: none). */
  needs_keys: string[] | null;
}

export interface WaitSnapshot extends PlanWait {
  phase: WaitPhase;
  /** When the deps were satisfied and the wait became active. */
  started_at: string | null;
  /** The latest evaluation while waiting: each term's value, errors, timer fire times. */
  last_evaluation: WaitProgressRecord['last'] | null;
  /** Stored when the wait resolved: what made it true. */
  evidence: WaitEvidence | null;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A line of a task's log: written by its handler (ctx.log), or by braid about the attempt. */
export interface LogLine {
  /** bigint ids travel as decimal strings; they order a workflow's lines. */
  id: string;
  task: string;
  attempt: number;
  at: Date;
  level: LogLevel;
  source: 'handler' | 'braid';
  message: string;
  fields: Record<string, unknown> | null;
}

export interface LogPage {
  lines: LogLine[];
  /** Pass as `after` for the lines stored since (when following), or for the next page when has_more. */
  next_after: string | null;
  has_more: boolean;
}

export interface SignalPage {
  signals: SignalRow[];
  /** Pass as `cursorId` for the next page; null on the last page. */
  next_cursor_id: string | null;
  has_more: boolean;
}

export interface UpgradeRecord {
  from: string;
  to: string;
  at: Date;
}

export interface WorkflowStatus {
  workflow: WorkflowRecord;
  tasks: (TaskRecord & { pending_reason: string | null; skip_reason: string | null })[];
  /** Its moves between versions (braid upgrade, retry --on-current), oldest first. */
  upgrades: UpgradeRecord[];
  /** The pauses that hold some of its tasks (its name's, its tasks' queues' and kinds'). */
  pauses: PauseRecord[];
  /** Operator actions on it (task actions, bulk operations), oldest first. */
  audit: AuditRecord[];
}

export interface WaitDiagnostics {
  workflow_id: string;
  task: string;
  phase: WaitPhase;
  expr: string;
  /** The expression's value over the terms' current values. */
  expr_result: boolean;
  /** The expression's own error; a term's error is on the term. */
  eval_error: string | null;
  terms: TermValue[];
  inputs: {
    /** The rows generic terms read, per declared key (signal terms list their matches on the term). */
    signals: Record<string, { count: number; ids: string[] }>;
    timers: Record<string, { fire_at: string | null; fired: boolean }>;
    deps: Record<string, unknown>;
  };
  /** The scan stopped at the limit: the values reflect only the rows scanned. */
  truncated: boolean;
  signal_scan_limit: number;
  signals_scanned: number;
  evaluated_at: string;
  /** The stored evidence, when the wait already resolved. */
  evidence: WaitEvidence | null;
}

/**
 * What the workflow list is searched by (braid list's flags, the API's query, the UI's search): every given
 * filter must hold. Newest first, paged by `cursor`.
 */
export interface WorkflowSearch {
  state?: 'running' | 'completed' | 'failed' | 'cancelled';
  name?: string;
  /** Its version's hash begins with it. */
  version?: string;
  /** The id begins with it: a business key's prefix (`refund:r1`). */
  idPrefix?: string;
  /** Inputs values: `{ path: 'customer.id', value: 'c1' }` holds when inputs.customer.id is "c1" (or the JSON value c1 is). */
  inputs?: { path: string; value: string }[];
  createdAfter?: string;
  createdBefore?: string;
  finalizedAfter?: string;
  finalizedBefore?: string;
  /** Some task's error, or the workflow's output error, contains this text (case-insensitive). */
  error?: string;
  /** Only workflows no `start` task started. */
  topLevel?: boolean;
  /** Only the children of this workflow. */
  parentId?: string;
  cursor?: string;
  limit?: number;
}

/** A page of the workflow list (GET /api/workflows). */
export interface WorkflowPage {
  workflows: WorkflowSummary[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}
