import { braidOutcome, type Scrubbed } from '../core/privacy.js';
import type { Queryable } from '../db/types.js';
import { lockWorkflows } from '../sql/advance.js';
import { type AttemptOutcome, type AttemptRef, deleteUnknownClaims, endAttemptSql, unclaim } from '../sql/attempts.js';
import { workerRangesWorkflows } from '../sql/claims.js';
import { advanceWorkflow } from './advance.js';
import type { AdvanceContext } from './context.js';

/**
 * Ends an attempt that did not complete, in the caller's transaction, through the worker protocol's
 * end_attempt() (every worker's one path): an error retries with backoff until max_attempts, then discards; a
 * handler's cancel cancels for good; a snooze reschedules without using up the attempt; a release (shutdown)
 * makes it available again at once. Final outcomes cascade to dependents here. Returns false when the attempt
 * was no longer running (a no-op).
 */
export async function endAttempt(q: Queryable, ctx: AdvanceContext, ref: AttemptRef, outcome: Scrubbed<AttemptOutcome>): Promise<boolean> {
  const end = await endAttemptSql(q, ctx.s, ref, outcome, ctx.now, true);
  if (end === 'stale') return false;
  if (end === 'discarded' || end === 'cancelled') await advanceWorkflow(q, ctx, ref.workflowId, [{ name: ref.name, state: end }]);
  return true;
}

const cancelled = braidOutcome<AttemptOutcome>({ type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } });

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
    if (!released.has(`${ref.workflowId}\u0000${ref.name}`)) await endAttempt(q, ctx, ref, cancelled);
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
  // the items of its running ranges get rows first: the claims' attempts are looked up by row
  await lockWorkflows(q, ctx.s, await workerRangesWorkflows(q, ctx.s, workerId));
  const rows = await deleteUnknownClaims(q, ctx.s, workerId, claimedAt, known);
  await releaseTasks(
    q,
    ctx,
    rows.map((r) => ({ workflowId: r.workflow_id, name: r.name, attempt: r.attempt, workerId })),
  );
  return rows.length;
}
