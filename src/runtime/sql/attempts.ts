import type { Queryable } from '../db/types.js';
import type { RetryPolicy } from '../engine/decide.js';

/**
 * The statements that end attempts other than by completion (end-attempt.ts decides which one applies).
 */

export interface AttemptRef {
  workflowId: string;
  name: string;
  attempt: number;
  workerId: string;
}

export interface TaskError {
  message: string;
  name?: string;
  stack?: string;
  kind?: 'error' | 'timeout' | 'cancel' | 'lost' | 'shutdown' | 'output';
  /**
   * The error's code: braid's own — output_invalid (the output breaks the task's `returns`), output_too_large
   * (it is over the task's `max_output`: never retried), args_invalid (its args did not render), flow_invalid
   * (its stored flow control cannot be enforced: the task ends without running) — or the `code` of what the
   * handler threw (a string), which a task's `retry.non_retryable` may name.
   */
  code?: string;
  /** The handler said no retry can mend it (a NonRetryableError, ctx.fail with retry: false). */
  no_retry?: true;
  /** Why the task ended with attempts left: what made this failure one that is not retried. */
  not_retried?: string;
}

/** What a handler's attempt ended in, other than success. */
export type AttemptOutcome =
  | { type: 'error'; error: TaskError }
  | { type: 'cancel'; error: TaskError }
  | { type: 'snooze'; ms: number }
  | { type: 'release'; error: TaskError };

/** An error as stored in the task's history: with when its attempt started and the worker that ran it (its timeline). */
export type ErrorEntry = TaskError & { attempt: number; at: string; started_at?: string; worker?: string };

export interface RunningRow {
  state: string;
  attempt: number;
  max_attempts: number;
  /** null: the default policy. */
  retry: RetryPolicy | null;
  cancel_requested: boolean;
  worker_id: string | null;
  queue: string;
  started_at: Date | null;
}

/** Whether this attempt still runs on this worker (not timed out, cancelled or rescued). */
export async function attemptRunning(q: Queryable, s: string, ref: AttemptRef): Promise<boolean> {
  const { rows } = await q.query<{ ok: boolean }>(
    `SELECT (state = 'running' AND attempt = $3 AND worker_id = $4) AS ok FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2`,
    [ref.workflowId, ref.name, ref.attempt, ref.workerId],
  );
  return rows[0]?.ok === true;
}

/** The task's row, locked (the workflow's lock is the caller's). */
export async function lockTask(q: Queryable, s: string, workflowId: string, name: string): Promise<RunningRow | undefined> {
  const { rows } = await q.query<RunningRow>(
    `SELECT state, attempt, max_attempts, retry, cancel_requested, worker_id, queue, started_at
       FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2 FOR UPDATE`,
    [workflowId, name],
  );
  return rows[0];
}

/** The attempt did not count (a snooze, a release): back to `state` at `at`, its attempt given back. */
export async function requeueAttempt(
  q: Queryable,
  s: string,
  ref: AttemptRef,
  state: 'scheduled' | 'available',
  at: Date,
  notes: readonly ErrorEntry[],
): Promise<void> {
  await q.query(
    `UPDATE ${s}.tasks SET state = $3, attempt = attempt - 1, scheduled_at = $4, worker_id = NULL, errors = errors || $5::jsonb
      WHERE workflow_id = $1 AND name = $2`,
    [ref.workflowId, ref.name, state, at, JSON.stringify(notes)],
  );
}

/** The attempt failed and the task runs again: `retryable` at `at`, or `available` at once keeping its place (at null). */
export async function retryAttempt(
  q: Queryable,
  s: string,
  ref: AttemptRef,
  state: 'retryable' | 'available',
  at: Date | null,
  entry: ErrorEntry,
): Promise<void> {
  await q.query(
    `UPDATE ${s}.tasks SET state = $5, scheduled_at = coalesce($3, scheduled_at), worker_id = NULL, errors = errors || $4::jsonb
      WHERE workflow_id = $1 AND name = $2`,
    [ref.workflowId, ref.name, at, JSON.stringify([entry]), state],
  );
}

/** The attempt ended the task for good (discarded, cancelled). */
export async function finalizeAttempt(q: Queryable, s: string, ref: AttemptRef, state: string, now: Date, entry: ErrorEntry): Promise<void> {
  await q.query(`UPDATE ${s}.tasks SET state = $3, finalized_at = $4, worker_id = NULL, errors = errors || $5::jsonb WHERE workflow_id = $1 AND name = $2`, [
    ref.workflowId,
    ref.name,
    state,
    now,
    JSON.stringify([entry]),
  ]);
}

/** Claimed attempts that never started back to available as if never claimed, unless their workflow is being cancelled. */
export async function unclaim(q: Queryable, s: string, refs: readonly AttemptRef[]): Promise<{ workflow_id: string; name: string }[]> {
  const { rows } = await q.query<{ workflow_id: string; name: string }>(
    `UPDATE ${s}.tasks t SET state = 'available', attempt = t.attempt - 1, worker_id = NULL, started_at = NULL
       FROM jsonb_to_recordset($1::jsonb) AS v(workflow_id text, name text, attempt int, worker_id text)
      WHERE t.workflow_id = v.workflow_id AND t.name = v.name AND t.attempt = v.attempt
        AND t.worker_id = v.worker_id AND NOT t.cancel_requested
      RETURNING t.workflow_id, t.name`,
    [JSON.stringify(refs.map((r) => ({ workflow_id: r.workflowId, name: r.name, attempt: r.attempt, worker_id: r.workerId })))],
  );
  return rows;
}

/**
 * Deletes a worker's claims recorded at the given times that it does not know (their reply was lost), and
 * returns their tasks still running for it.
 */
export async function deleteUnknownClaims(
  q: Queryable,
  s: string,
  workerId: string,
  claimedAt: readonly Date[],
  known: readonly string[],
): Promise<{ workflow_id: string; name: string; attempt: number }[]> {
  const { rows } = await q.query<{ workflow_id: string; name: string; attempt: number }>(
    `WITH lost AS (
       DELETE FROM ${s}.claims WHERE worker_id = $1 AND claimed_at = ANY($2::timestamptz[]) AND NOT (id = ANY($3::bigint[]))
       RETURNING workflow_ids, names)
     SELECT t.workflow_id, t.name, t.attempt FROM lost c CROSS JOIN LATERAL unnest(c.workflow_ids, c.names) AS k(workflow_id, name)
       JOIN ${s}.tasks t ON t.workflow_id = k.workflow_id AND t.name = k.name
      WHERE t.worker_id = $1`,
    [workerId, claimedAt, known],
  );
  return rows;
}

/** Stores the args and metadata an attempt rendered (while it runs); returns the row version's new address. */
export async function storeRenderedArgs(q: Queryable, s: string, ref: AttemptRef, rendered: { args: unknown; metadata: unknown }): Promise<string | undefined> {
  const { rows } = await q.query<{ tid: string }>(
    `UPDATE ${s}.tasks SET args = $5, metadata = $6 WHERE workflow_id = $1 AND name = $2 AND attempt = $3 AND worker_id = $4 RETURNING ctid::text AS tid`,
    [ref.workflowId, ref.name, ref.attempt, ref.workerId, JSON.stringify(rendered.args), JSON.stringify(rendered.metadata ?? {})],
  );
  return rows[0]?.tid;
}
