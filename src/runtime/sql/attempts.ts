import type { Scrubbed } from '../core/privacy.js';
import type { Queryable } from '../db/types.js';

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

/** Whether this attempt still runs on this worker (not timed out, cancelled or rescued). */
export async function attemptRunning(q: Queryable, s: string, ref: AttemptRef): Promise<boolean> {
  const { rows } = await q.query<{ ok: boolean }>(
    `SELECT (state = 'running' AND attempt = $3 AND worker_id = $4) AS ok FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2`,
    [ref.workflowId, ref.name, ref.attempt, ref.workerId],
  );
  return rows[0]?.ok === true;
}

/** A task's state after end_attempt(), or `stale` when the attempt no longer ran for the worker. */
export type AttemptEnd = 'retryable' | 'available' | 'scheduled' | 'discarded' | 'cancelled' | 'stale';

/**
 * Ends an attempt that did not complete through the protocol's end_attempt() (sql/protocol.sql decides: retry
 * with backoff, discard, cancel, snooze, release). `followUp`: the caller moves the dependents of a task that
 * ended for good in its transaction; otherwise an `advance` effect does.
 */
export async function endAttemptSql(
  q: Queryable,
  s: string,
  ref: AttemptRef,
  outcome: Scrubbed<AttemptOutcome>,
  now: Date,
  followUp: boolean,
): Promise<AttemptEnd> {
  const { rows } = await q.query<{ end: AttemptEnd }>(`SELECT ${s}.end_attempt($1, $2, $3, $4, $5, $6, $7, $8, $9) AS end`, [
    ref.workflowId,
    ref.name,
    ref.attempt,
    ref.workerId,
    outcome.type,
    outcome.type === 'snooze' ? null : JSON.stringify(outcome.error),
    outcome.type === 'snooze' ? Math.max(0, Math.round(outcome.ms)) : null,
    now,
    followUp,
  ]);
  return rows[0].end;
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
