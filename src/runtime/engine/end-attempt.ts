import { storableText } from '../core/storable.js';
import type { Queryable } from '../db/types.js';
import { lockWorkflows } from '../sql/advance.js';
import {
  type AttemptOutcome,
  type AttemptRef,
  deleteUnknownClaims,
  type ErrorEntry,
  finalizeAttempt,
  lockTask,
  requeueAttempt,
  retryAttempt,
  type TaskError,
  unclaim,
} from '../sql/attempts.js';
import { insertLogLines } from '../sql/task-logs.js';
import { advanceWorkflow } from './advance.js';
import type { AdvanceContext } from './context.js';
import { attemptJitter, DEFAULT_RETRY, dueState, failureEnd, retryDelayMs } from './decide.js';

/** An error as it can be stored: its texts with U+0000 and lone surrogates escaped. */
function storableError(e: TaskError): TaskError {
  const out: TaskError = { ...e, message: storableText(e.message) };
  if (e.name !== undefined) out.name = storableText(e.name);
  if (e.stack !== undefined) out.stack = storableText(e.stack);
  return out;
}

/**
 * Ends an attempt that did not complete, in the caller's transaction: an error retries with backoff until
 * max_attempts, then discards; a handler's cancel cancels for good; a snooze reschedules without using up
 * the attempt; a release (shutdown) makes it available again at once. Final outcomes cascade to dependents.
 * Returns false when the attempt was no longer running (a no-op).
 */
export async function endAttempt(
  q: Queryable,
  ctx: AdvanceContext,
  ref: AttemptRef,
  outcome: AttemptOutcome,
  random: () => number = attemptJitter(ref),
): Promise<boolean> {
  const { s, now } = ctx;
  await lockWorkflows(q, s, [ref.workflowId]);
  const task = await lockTask(q, s, ref.workflowId, ref.name);
  if (task?.state !== 'running' || task.attempt !== ref.attempt || task.worker_id !== ref.workerId) return false;
  // a cancelled workflow's task ends cancelled whatever its attempt ended in: released or snoozed, it would run again
  if ((outcome.type === 'snooze' || outcome.type === 'release') && !task.cancel_requested) {
    const at = new Date(now.getTime() + (outcome.type === 'snooze' ? outcome.ms : 0));
    const state = dueState(at, now);
    const started = task.started_at ? { started_at: new Date(task.started_at).toISOString() } : {};
    await requeueAttempt(
      q,
      s,
      ref,
      state,
      at,
      outcome.type === 'release' ? [{ attempt: ref.attempt, at: now.toISOString(), ...outcome.error, ...started, worker: ref.workerId }] : [],
    );
    await logEnd(
      q,
      ctx,
      ref,
      outcome.type === 'snooze' ? 'info' : 'warn',
      outcome.type === 'snooze'
        ? `snoozed for ${outcome.ms} ms: runs again at ${at.toISOString()} (the attempt is given back)`
        : `released (${storableText(outcome.error.message)}): runs again at once (the attempt is given back)`,
    );
    return true;
  }
  const entry: ErrorEntry = {
    attempt: ref.attempt,
    at: now.toISOString(),
    ...storableError('error' in outcome ? outcome.error : { kind: 'cancel', message: 'workflow cancelled' }),
    ...(task.started_at ? { started_at: new Date(task.started_at).toISOString() } : {}),
    worker: ref.workerId,
  };
  const { next, notRetried: why } = outcome.type === 'cancel' ? { next: 'cancelled' as const, notRetried: undefined } : failureEnd(task, entry);
  // a failure that ends the task with attempts left says why
  if (why !== undefined) entry.not_retried = why;
  delete entry.no_retry;
  if (next === 'retryable') {
    // a lost attempt (its worker died, or could not record the end) is no failure of the handler's to back
    // off from: detecting it took long enough, so it runs again at once, keeping its place in the queue
    const lost = entry.kind === 'lost';
    const retryAt = lost ? null : new Date(now.getTime() + retryDelayMs(task.retry ?? DEFAULT_RETRY, ref.attempt, random));
    await retryAttempt(q, s, ref, lost ? 'available' : 'retryable', retryAt, entry);
    await logEnd(
      q,
      ctx,
      ref,
      lost ? 'warn' : 'error',
      lost
        ? `attempt ${ref.attempt} lost (${entry.message}): runs again at once`
        : `attempt ${ref.attempt} of ${task.max_attempts} failed (${entry.code ?? entry.kind ?? 'error'}): ${entry.message}; ` +
            `retry at ${retryAt!.toISOString()}`,
    );
    return true;
  }
  await finalizeAttempt(q, s, ref, next, now, entry);
  await logEnd(
    q,
    ctx,
    ref,
    next === 'cancelled' ? 'warn' : 'error',
    next === 'cancelled'
      ? `cancelled: ${entry.message}`
      : `attempt ${ref.attempt} of ${task.max_attempts} failed (${entry.code ?? entry.kind ?? 'error'}): ${entry.message}; the task is discarded${
          why !== undefined ? ` (not retried: ${why})` : ''
        }`,
  );
  await advanceWorkflow(q, ctx, ref.workflowId, [{ name: ref.name, state: next }]);
  return true;
}

/** braid's own line about how an attempt ended, in the task's log (with the end, in its transaction). */
function logEnd(q: Queryable, ctx: AdvanceContext, ref: AttemptRef, level: 'info' | 'warn' | 'error', message: string): Promise<void> {
  return insertLogLines(q, ctx.s, [
    { workflow_id: ref.workflowId, task: ref.name, attempt: ref.attempt, at: ctx.now, level, source: 'braid', message, fields: { worker: ref.workerId } },
  ]);
}

/**
 * Gives claimed attempts that never started back to their queue as if never claimed (prefetched tasks at
 * shutdown); those of a cancelled workflow end cancelled instead.
 */
export async function releaseTasks(q: Queryable, ctx: AdvanceContext, refs: readonly AttemptRef[]): Promise<void> {
  if (refs.length === 0) return;
  await lockWorkflows(q, ctx.s, [...new Set(refs.map((r) => r.workflowId))]);
  const rows = await unclaim(q, ctx.s, refs);
  const released = new Set(rows.map((r) => `${r.workflow_id}\u0000${r.name}`));
  for (const ref of refs) {
    if (!released.has(`${ref.workflowId}\u0000${ref.name}`))
      await endAttempt(q, ctx, ref, { type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } });
  }
}

/**
 * Releases the tasks of a worker's claims recorded at the given times that it does not know (a claiming
 * statement committed but its reply was lost): those still running for it go back to their queue as if never
 * claimed, and the claims are deleted. Returns how many tasks were released.
 */
export async function releaseLostClaims(
  q: Queryable,
  ctx: AdvanceContext,
  workerId: string,
  claimedAt: readonly Date[],
  known: readonly string[],
): Promise<number> {
  const rows = await deleteUnknownClaims(q, ctx.s, workerId, claimedAt, known);
  await releaseTasks(
    q,
    ctx,
    rows.map((r) => ({ workflowId: r.workflow_id, name: r.name, attempt: r.attempt, workerId })),
  );
  return rows.length;
}
