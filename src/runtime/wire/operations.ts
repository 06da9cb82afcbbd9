/** Incident operations as the API serves them: pauses and audit lines (wire/index.ts exports these with the rest). */

/** What a pause holds: the tasks of a queue, of a kind (every workflow's), or of every workflow of a name. */
export type PauseScope = 'queue' | 'kind' | 'workflow';

export const PAUSE_SCOPES: readonly PauseScope[] = ['queue', 'kind', 'workflow'];

/** A pause in force (braid pause): who made it, when, and why. */
export interface PauseRecord {
  scope: PauseScope;
  target: string;
  actor: string;
  reason: string | null;
  paused_at: Date | string;
}

/** `by ada at 2026-12-04T10:00:00.000Z: "stripe outage"`: who paused, when, and why. */
export function pausedBy(p: PauseRecord): string {
  const at = typeof p.paused_at === 'string' ? p.paused_at : p.paused_at.toISOString();
  return `by ${p.actor} at ${at}${p.reason ? `: ${JSON.stringify(p.reason)}` : ''}`;
}

/** `paused (queue payments, by ada at 2026-12-04T10:00:00.000Z: "stripe outage")`: what status says of a task a pause holds. */
export function pauseText(p: PauseRecord): string {
  return `paused (${p.scope} ${p.target}, ${pausedBy(p)})`;
}

/** One operator action, as recorded (an append-only line). */
export interface AuditRecord {
  id: string;
  at: Date | string;
  actor: string;
  /** The actor's role when a user acted through the API (null for the CLI and the TypeScript API). */
  role: string | null;
  /** Where an API request came from (its remote address). */
  source: string | null;
  /** What was done: pause, resume, task.retry, task.skip, task.complete, bulk.retry, ... */
  action: string;
  /** What it was done to, in words ("queue payments", a workflow id, an operation's name). */
  target: string;
  workflow_id: string | null;
  task: string | null;
  reason: string | null;
  detail: Record<string, unknown> | null;
}

/** `2026-12-04T10:00:00.000Z  task.skip charge by ada: "fixed by hand"` (`bulk.retry (INC-42) by ada`): an audit line in a workflow's history. */
export function auditText(a: AuditRecord): string {
  const at = typeof a.at === 'string' ? a.at : a.at.toISOString();
  const what = a.task ? ` ${a.task}` : a.action.startsWith('bulk.') ? ` (${a.target})` : '';
  const failed = a.detail?.outcome === 'failed' ? ` (failed: ${String(a.detail.error)})` : '';
  return `${at}  ${a.action}${what} by ${a.actor}${a.reason ? `: ${JSON.stringify(a.reason)}` : ''}${failed}`;
}

/**
 * Which tasks a whole-workflow retry runs again: all, every task; failed_only, the cancelled and discarded ones
 * and those downstream of them that did not complete; failed_and_downstream, those and everything downstream.
 */
export type RetryMode = 'all' | 'failed_only' | 'failed_and_downstream';

export const RETRY_MODES: readonly RetryMode[] = ['all', 'failed_only', 'failed_and_downstream'];

/**
 * What every face of a retry (braid retry, bulk retry, POST .../retry, the UI) runs again unless told otherwise:
 * what failed and what it held back, never a task that completed upstream of it (a charge, a refund, a link
 * sent). `all` re-runs side effects and is asked for by name.
 */
export const DEFAULT_RETRY_MODE: RetryMode = 'failed_and_downstream';

/** What a bulk operation does to each workflow it selected. */
export type BulkAction = 'retry' | 'cancel' | 'upgrade' | 'signal';

export const BULK_ACTIONS: readonly BulkAction[] = ['retry', 'cancel', 'upgrade', 'signal'];

/** A bulk operation (braid bulk) as recorded: what, over which selection, by whom, and how far it is. */
export interface BulkOperation {
  name: string;
  action: BulkAction;
  /** The action's own options: retry's mode, reset_history and on_current; upgrade's to (a hash, frozen); signal's key and payload. */
  options: Record<string, unknown>;
  /** The filters it selected by, as given (the list's, and `where`). */
  filter: Record<string, unknown>;
  actor: string;
  reason: string | null;
  rate_per_s: number | null;
  state: 'running' | 'completed' | 'cancelled';
  total: number;
  done: number;
  failed: number;
  created_at: Date | string;
  finished_at: Date | string | null;
  runner: string | null;
  runner_at: Date | string | null;
}

/** `INC-42  retry  running  600/1000 done, 2 failed  by ada`: one line of braid bulk list. */
export function bulkText(o: BulkOperation): string {
  return `${o.name}  ${o.action}  ${o.state}  ${o.done}/${o.total} done${o.failed > 0 ? `, ${o.failed} failed` : ''}  by ${o.actor}`;
}

/** What creating an operation says: the selection's size and first ids, and the operation (absent for a dry run). */
export interface BulkCreated {
  name: string;
  action: BulkAction;
  total: number;
  first_ids: string[];
  /** Workflows `where` could not be evaluated on (left out), and the first reason. */
  unevaluated: number;
  first_error?: string;
  /** The operation recorded (a dry run records none); `existing`: one of this name was there already. */
  operation?: BulkOperation;
  existing?: boolean;
}
