/**
 * The sequences every path that ends or holds tasks runs, in the caller's transaction with the workflow's row
 * lock held: settle what finalized (settle.ts: the advance wave of sql/advance-wave.ts, which a completion's
 * statement runs too, and an upgrade for the final deps of the rows it writes), decide the conditions and activate the waits that became ready,
 * act on what the waits decided (a failed workflows term cancels its task, as a failed dep would). The queues of
 * what became available are woken by the tasks table's trigger (migration 015). One direction: engine/ runs the sequences, waits/ only reads and decides.
 */
import type { Queryable } from '../db/types.js';
import { type Finalized, markCancelled, type SettleResult } from '../sql/advance.js';
import {
  insertTimers,
  insertTimersMany,
  loadDepRows,
  loadWaitingTasks,
  loadWaitingTasksMany,
  loadWaitWorkflow,
  loadWaitWorkflows,
  markWaitsStarted,
  markWaitsStartedMany,
  notifyTimer,
  type WaitingTask,
  type WaitWorkflow,
} from '../sql/waits.js';
import type { Emitted } from '../waits/gather.js';
import { decideConditions } from './conditions.js';
import type { AdvanceContext } from './context.js';
import { deleteFinalized, settle } from './settle.js';
import { activationTimers, anchorsOnDeps, judgeWaits, type WaitsToJudge, type WaitVerdict, waitsToJudge } from './wait-pass.js';

export interface WaitPass {
  /** Tasks whose wait resolved. */
  resolved: string[];
  /** Tasks cancelled because a workflows term with on_failure: cancel failed. */
  cancelled: string[];
}

const empty = (): WaitPass => ({ resolved: [], cancelled: [] });

/**
 * Applies finalized tasks of a workflow: settle() advances or cancels their dependents and closes the workflow
 * when nothing is open, then the waits that became ready are activated (which may cancel more).
 */
export async function advanceWorkflow(q: Queryable, ctx: AdvanceContext, workflowId: string, finalized: Finalized[]): Promise<SettleResult> {
  const result = await settle(q, ctx, workflowId, finalized);
  if (result.waitsReady.length > 0) await activateWaits(q, ctx, workflowId, result.waitsReady);
  return result;
}

/**
 * Cancels pending tasks of one workflow as a failed dep would — a failed workflows term, a new task whose dep
 * already failed — and cascades to their dependents. Returns the names cancelled at first.
 */
export async function cancelPending(q: Queryable, ctx: AdvanceContext, workflowId: string, reasons: ReadonlyMap<string, string>): Promise<string[]> {
  if (reasons.size === 0) return [];
  const gone = await markCancelled(q, ctx.s, workflowId, ctx.now, reasons);
  await advanceWorkflow(q, ctx, workflowId, gone);
  return gone.map((g) => g.name);
}

/**
 * Deletes task rows of one workflow: their dependents see a deleted dep, which fails them unless they ignore
 * deleted deps. What retention's per-task mode does, and an operator's last resort.
 */
export async function deleteTasks(q: Queryable, ctx: AdvanceContext, workflowId: string, names: readonly string[]): Promise<SettleResult> {
  return advanceWorkflow(q, ctx, workflowId, await deleteFinalized(q, ctx.s, workflowId, names));
}

/**
 * Tasks whose deps were just satisfied and that something holds: their conditions are decided first (a false
 * one skips the task, which cascades), then their waits become active: their start is recorded (unless the
 * completing statement already did), their timers computed, and they are judged at once, so signals emitted
 * earlier count.
 */
export async function activateWaits(q: Queryable, ctx: AdvanceContext, workflowId: string, names: readonly string[]): Promise<WaitPass> {
  if (names.length === 0) return empty();
  const decided = await decideConditions(q, ctx, workflowId, names);
  if (decided) await advanceWorkflow(q, ctx, workflowId, decided);
  await markWaitsStarted(q, ctx.s, workflowId, names, ctx.now);
  const w = await loadWaitWorkflow(q, ctx.s, workflowId);
  if (w?.state !== 'running') return empty();
  const tasks = await loadWaitingTasks(q, ctx.s, workflowId, { names });
  if (tasks.length === 0) return empty();
  const anchorDeps = [...new Set(tasks.flatMap((t) => t.deps))];
  const depRows = anchorDeps.length > 0 && anchorsOnDeps(tasks) ? await loadDepRows(q, ctx.s, workflowId, anchorDeps) : [];
  const timers = activationTimers(w, tasks, depRows);
  await insertTimers(q, ctx.s, workflowId, w.attempt, timers);
  if (timers.length > 0) await notifyTimer(q, ctx.schema, new Date(Math.min(...timers.map((t) => t.fire_at.getTime()))));
  return actOn(q, ctx, workflowId, await judgeOne(q, ctx, { w, tasks }));
}

/**
 * activateWaits for new workflows whose tasks `names` wait with no deps and no condition (a batch start's roots):
 * the same steps, each one statement for the whole batch rather than one per workflow, then the batch judged as a
 * timer storm's is (evaluateWaitsBatch).
 */
export async function activateWaitsMany(q: Queryable, ctx: AdvanceContext, ids: readonly string[], names: readonly string[]): Promise<void> {
  if (ids.length === 0 || names.length === 0) return;
  await markWaitsStartedMany(q, ctx.s, ids, names, ctx.now);
  const workflows = await loadWaitWorkflows(q, ctx.s, ids);
  const waiting = new Map<string, WaitingTask[]>();
  for (const t of await loadWaitingTasksMany(
    q,
    ctx.s,
    ids.flatMap((workflow_id) => names.map((name) => ({ workflow_id, name }))),
  ))
    waiting.set(t.workflow_id, [...(waiting.get(t.workflow_id) ?? []), t]);
  const timers = workflows.flatMap((w) => activationTimers(w, waiting.get(w.id) ?? [], []).map((t) => ({ ...t, workflow_id: w.id, attempt: w.attempt })));
  await insertTimersMany(q, ctx.s, timers);
  if (timers.length > 0) await notifyTimer(q, ctx.schema, new Date(timers.reduce((m, t) => Math.min(m, t.fire_at.getTime()), Infinity)));
  await evaluateWaitsBatch(q, ctx, new Map(ids.map((id) => [id, names])));
}

/**
 * Judges a workflow's active waits again: those named (a timer fired), or those that declare `key` (a signal).
 * `known` spares reads the caller already made: the workflow row, the signal just emitted, and the tasks waiting on
 * its key (read with it).
 */
export async function evaluateWaits(
  q: Queryable,
  ctx: AdvanceContext,
  workflowId: string,
  filter: { names?: readonly string[]; key?: string },
  known: { workflow?: WaitWorkflow; emitted?: Emitted; tasks?: WaitingTask[] } = {},
): Promise<WaitPass> {
  const w = known.workflow ?? (await loadWaitWorkflow(q, ctx.s, workflowId));
  if (w?.state !== 'running') return empty();
  const tasks = known.tasks ?? (await loadWaitingTasks(q, ctx.s, workflowId, filter));
  return tasks.length === 0 ? empty() : actOn(q, ctx, workflowId, await judgeOne(q, ctx, { w, tasks, emitted: known.emitted }));
}

/** evaluateWaits for many workflows at once (their locks held, a timer storm's batch). Returns how many had a wait judged. */
export async function evaluateWaitsBatch(q: Queryable, ctx: AdvanceContext, targets: ReadonlyMap<string, readonly string[]>): Promise<number> {
  const verdicts = await judgeWaits(q, ctx, await waitsToJudge(q, ctx, targets));
  for (const [workflowId, verdict] of verdicts) await cancelPending(q, ctx, workflowId, verdict.failures);
  return verdicts.size;
}

/** The verdict of one workflow's waits (a batch of one). */
async function judgeOne(q: Queryable, ctx: AdvanceContext, waits: WaitsToJudge): Promise<WaitVerdict> {
  return (await judgeWaits(q, ctx, [waits])).get(waits.w.id) ?? { resolved: [], failures: new Map() };
}

async function actOn(q: Queryable, ctx: AdvanceContext, workflowId: string, verdict: WaitVerdict): Promise<WaitPass> {
  return { resolved: verdict.resolved, cancelled: await cancelPending(q, ctx, workflowId, verdict.failures) };
}
