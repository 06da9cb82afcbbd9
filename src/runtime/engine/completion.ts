import type { PlanTask } from '../../compiler/plan.js';
import type { Database, Queryable } from '../db/types.js';
import { lockWorkflows } from '../sql/advance.js';
import type { AttemptRef } from '../sql/attempts.js';
import { type Completion, type CompletionResult, completeTasks, type EagerClaim, workflowsToFinalize } from '../sql/complete.js';
import { activateWaits } from './advance.js';
import type { AdvanceContext } from './context.js';
import { applyExtension } from './extend.js';
import { finalizeWorkflows } from './settle.js';

/**
 * What follows a completion statement (sql/complete.ts), written once: the waits its dependents' deps made
 * active are activated and evaluated, and workflows left with every task closed and an output to evaluate are
 * finalized. The worker runs the steps in the completion's transaction or just after it; the leader sweeps what
 * a crash between them left behind.
 */

/** Activates and evaluates the waits a completion batch made active. `lock`: the caller does not hold the workflows' locks yet. */
export async function activateCompleted(q: Queryable, ctx: AdvanceContext, activated: ReadonlyMap<string, string[]>, lock: boolean): Promise<void> {
  if (activated.size === 0) return;
  if (lock) await lockWorkflows(q, ctx.s, [...activated.keys()]);
  for (const [workflowId, names] of activated) await activateWaits(q, ctx, workflowId, names);
}

/** Finalizes workflows whose tasks are all closed but whose output is still to be evaluated. */
export async function finalizePending(q: Queryable, ctx: AdvanceContext, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  // it writes none of their tasks (all ended): their ranged items need no rows
  await lockWorkflows(q, ctx.s, ids, { taskRows: false });
  await finalizeWorkflows(q, ctx, await workflowsToFinalize(q, ctx.s, ids));
}

/** A completion and what follows it, all in the caller's transaction (a batch whose dependents wait). */
export async function completeAll(tx: Queryable, ctx: AdvanceContext, items: readonly Completion[], claim?: EagerClaim) {
  const result = await completeTasks(tx, ctx, items, claim);
  await activateCompleted(tx, ctx, result.activated, false);
  await finalizePending(tx, ctx, result.toFinalize);
  return result;
}

/**
 * One attempt's completion in a transaction of its own (the handler's, or one that adds tasks): under its
 * workflow's lock the extensions are inserted, the attempt completes, and what follows runs. False when the
 * attempt was no longer running (timed out, cancelled or rescued): the caller rolls the transaction back.
 */
export async function completeAttempt(
  tx: Queryable,
  ctx: AdvanceContext,
  ref: AttemptRef,
  output: { value: unknown; text: string },
  extensions: readonly PlanTask[][],
): Promise<boolean> {
  await lockWorkflows(tx, ctx.s, [ref.workflowId]);
  for (const tasks of extensions) await applyExtension(tx, ctx, ref.workflowId, tasks);
  const result = await completeTasks(tx, ctx, [{ ...ref, output: output.value, outputText: output.value === undefined ? output.text : undefined }]);
  if (result.skipped.length > 0) return false;
  await activateCompleted(tx, ctx, result.activated, false);
  await finalizePending(tx, ctx, result.toFinalize);
  return true;
}

/**
 * A worker's batch of completions. When a dependent's wait may become active, the statement and what follows
 * commit in one transaction (completeAll). Otherwise the statement commits alone (it is atomic by itself) and
 * what follows is `followUp`, for the caller to run once it has started the dependents it claimed; the leader
 * sweeps what a crash in between leaves. `context` reads the clock (through the transaction when given one).
 */
export async function completeBatch(
  db: Database,
  context: (tx?: Queryable) => Promise<AdvanceContext>,
  items: readonly Completion[],
  claim: EagerClaim,
): Promise<CompletionResult & { followUp: () => Promise<void> }> {
  if (items.some((i) => i.dependentsWait)) {
    const result = await db.transaction(async (tx) => completeAll(tx, await context(tx), items, claim));
    return { ...result, followUp: async () => undefined };
  }
  const result = await completeTasks(db, await context(), items, claim);
  const followUp = async (): Promise<void> => {
    // a dependent added after this task was claimed has a wait the claim did not know of
    if (result.activated.size > 0) await db.transaction(async (tx) => activateCompleted(tx, await context(tx), result.activated, true));
    if (result.toFinalize.length > 0) await db.transaction(async (tx) => finalizePending(tx, await context(tx), result.toFinalize));
  };
  return { ...result, followUp };
}
