import { afterFailure, retryDelayMs, type RetryPolicy } from '../decide.js';
import type { Queryable } from '../db/types.js';
import { storableText } from '../storable.js';
import { lockWorkflows, notifyQueues, type AdvanceContext } from './advance.js';
import { advanceWorkflow } from '../waits.js';

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
}

/** What a handler's attempt ended in, other than success. */
export type AttemptOutcome =
  | { type: 'error'; error: TaskError }
  | { type: 'cancel'; error: TaskError }
  | { type: 'snooze'; ms: number }
  | { type: 'release'; error: TaskError };

/** An error as it can be stored: its texts with U+0000 and lone surrogates escaped. */
function storableError(e: TaskError): TaskError {
  const out: TaskError = { ...e, message: storableText(e.message) };
  if (e.name !== undefined) out.name = storableText(e.name);
  if (e.stack !== undefined) out.stack = storableText(e.stack);
  return out;
}

interface RunningRow {
  state: string;
  attempt: number;
  max_attempts: number;
  retry: RetryPolicy;
  cancel_requested: boolean;
  worker_id: string | null;
  queue: string;
}

/**
 * Ends an attempt that did not complete, in the caller's transaction: an error retries with backoff until
 * max_attempts, then discards; a handler's cancel cancels for good; a snooze reschedules without using up
 * the attempt; a release (shutdown) makes it available again at once. Final outcomes cascade to dependents.
 * Returns false when the attempt was no longer running (a no-op).
 */
export async function endAttempt(q: Queryable, ctx: AdvanceContext, ref: AttemptRef, outcome: AttemptOutcome, random: () => number = Math.random): Promise<boolean> {
  const { s, now } = ctx;
  await lockWorkflows(q, s, [ref.workflowId]);
  const { rows } = await q.query<RunningRow>(
    `SELECT state, attempt, max_attempts, retry, cancel_requested, worker_id, queue FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2 FOR UPDATE`,
    [ref.workflowId, ref.name],
  );
  const task = rows[0];
  if (!task || task.state !== 'running' || task.attempt !== ref.attempt || task.worker_id !== ref.workerId) return false;
  const where = `workflow_id = $1 AND name = $2`;
  // a cancelled workflow's task ends cancelled whatever its attempt ended in: released or snoozed, it would run again
  if ((outcome.type === 'snooze' || outcome.type === 'release') && !task.cancel_requested) {
    const at = new Date(now.getTime() + (outcome.type === 'snooze' ? outcome.ms : 0));
    const state = at.getTime() > now.getTime() ? 'scheduled' : 'available';
    const note = outcome.type === 'release' ? [{ attempt: ref.attempt, at: now.toISOString(), ...outcome.error }] : [];
    await q.query(`UPDATE ${s}.tasks SET state = $3, attempt = attempt - 1, scheduled_at = $4, worker_id = NULL, errors = errors || $5::jsonb WHERE ${where}`, [
      ref.workflowId,
      ref.name,
      state,
      at,
      JSON.stringify(note),
    ]);
    if (state === 'available') await notifyQueues(q, ctx.schema, [task.queue]);
    return true;
  }
  const entry = { attempt: ref.attempt, at: now.toISOString(), ...storableError('error' in outcome ? outcome.error : { kind: 'cancel', message: 'workflow cancelled' }) };
  const next = outcome.type === 'cancel' ? 'cancelled' : afterFailure(task);
  if (next === 'retryable') {
    // a lost attempt (its worker died, or could not record the end) is no failure of the handler's to back
    // off from: detecting it took long enough, so it runs again at once, keeping its place in the queue
    const lost = entry.kind === 'lost';
    const at = lost ? null : new Date(now.getTime() + retryDelayMs(task.retry, ref.attempt, random));
    await q.query(`UPDATE ${s}.tasks SET state = $5, scheduled_at = coalesce($3, scheduled_at), worker_id = NULL, errors = errors || $4::jsonb WHERE ${where}`, [
      ref.workflowId,
      ref.name,
      at,
      JSON.stringify([entry]),
      lost ? 'available' : 'retryable',
    ]);
    if (lost) await notifyQueues(q, ctx.schema, [task.queue]);
    return true;
  }
  await q.query(`UPDATE ${s}.tasks SET state = $3, finalized_at = $4, worker_id = NULL, errors = errors || $5::jsonb WHERE ${where}`, [
    ref.workflowId,
    ref.name,
    next,
    now,
    JSON.stringify([entry]),
  ]);
  const result = await advanceWorkflow(q, ctx, ref.workflowId, [{ name: ref.name, state: next }]);
  await notifyQueues(q, ctx.schema, result.queues);
  return true;
}

/**
 * Gives claimed attempts that never started back to their queue as if never claimed (prefetched tasks at
 * shutdown); those of a cancelled workflow end cancelled instead.
 */
export async function releaseTasks(q: Queryable, ctx: AdvanceContext, refs: readonly AttemptRef[]): Promise<void> {
  if (refs.length === 0) return;
  const { s } = ctx;
  await lockWorkflows(q, s, [...new Set(refs.map((r) => r.workflowId))]);
  const { rows } = await q.query<{ workflow_id: string; name: string; queue: string }>(
    `UPDATE ${s}.tasks t SET state = 'available', attempt = t.attempt - 1, worker_id = NULL, started_at = NULL
       FROM jsonb_to_recordset($1::jsonb) AS v(workflow_id text, name text, attempt int, worker_id text)
      WHERE t.workflow_id = v.workflow_id AND t.name = v.name AND t.attempt = v.attempt
        AND t.worker_id = v.worker_id AND NOT t.cancel_requested
      RETURNING t.workflow_id, t.name, t.queue`,
    [JSON.stringify(refs.map((r) => ({ workflow_id: r.workflowId, name: r.name, attempt: r.attempt, worker_id: r.workerId })))],
  );
  await notifyQueues(q, ctx.schema, [...new Set(rows.map((r) => r.queue))]);
  const released = new Set(rows.map((r) => `${r.workflow_id}\u0000${r.name}`));
  for (const ref of refs) {
    if (!released.has(`${ref.workflowId}\u0000${ref.name}`)) await endAttempt(q, ctx, ref, { type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } });
  }
}

/**
 * Releases the tasks of a worker's claims recorded at the given times that it does not know (a claiming
 * statement committed but its reply was lost): those still running for it go back to their queue as if never
 * claimed, and the claims are deleted. Returns how many tasks were released.
 */
export async function releaseLostClaims(q: Queryable, ctx: AdvanceContext, workerId: string, claimedAt: readonly Date[], known: readonly string[]): Promise<number> {
  const { rows } = await q.query<{ workflow_id: string; name: string; attempt: number }>(
    `WITH lost AS (
       DELETE FROM ${ctx.s}.claims WHERE worker_id = $1 AND claimed_at = ANY($2::timestamptz[]) AND NOT (id = ANY($3::bigint[]))
       RETURNING workflow_ids, names)
     SELECT t.workflow_id, t.name, t.attempt FROM lost c CROSS JOIN LATERAL unnest(c.workflow_ids, c.names) AS k(workflow_id, name)
       JOIN ${ctx.s}.tasks t ON t.workflow_id = k.workflow_id AND t.name = k.name
      WHERE t.worker_id = $1`,
    [workerId, claimedAt, known],
  );
  await releaseTasks(q, ctx, rows.map((r) => ({ workflowId: r.workflow_id, name: r.name, attempt: r.attempt, workerId })));
  return rows.length;
}
