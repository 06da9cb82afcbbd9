import type { Queryable } from '../db/types.js';
import { lockWorkflows } from '../sql/advance.js';
import { cancelChildren, cancelOpenTasks, markTimedOut, requestStop } from '../sql/cancel.js';
import type { AdvanceContext } from './context.js';
import { closeTasks } from './settle.js';

/**
 * Cancels a workflow in the caller's transaction: every task not yet final and not running is cancelled;
 * running tasks are asked to stop (their handlers get an abort and may still finish), and so are the children
 * its start tasks started. The workflow ends cancelled (failed, for a timeout) once its last task is final. Returns the names of
 * the tasks cancelled now and of those asked to stop.
 */
export async function cancelWorkflow(
  q: Queryable,
  ctx: AdvanceContext,
  id: string,
  reason: 'cancel' | 'timeout' = 'cancel',
): Promise<{ found: boolean; cancelled: string[]; stopping: string[] }> {
  const w = (await lockWorkflows(q, ctx.s, [id])).get(id);
  if (!w) return { found: false, cancelled: [], stopping: [] };
  if (w.state !== 'running' || (reason === 'timeout' && w.cancel_requested)) return { found: true, cancelled: [], stopping: [] };
  // a timed-out workflow is cancelled the same way, and ends failed (finalWorkflowState)
  if (reason === 'timeout') await markTimedOut(q, ctx.s, id);
  const why = reason === 'timeout' ? { kind: 'timeout' as const, message: 'workflow timed out' } : { kind: 'cancel' as const, message: 'workflow cancelled' };
  const cancelled = await cancelOpenTasks(q, ctx.s, id, ctx.now, why);
  const stopping = await requestStop(q, ctx.s, ctx.schema, id);
  await cancelChildren(q, ctx.s, ctx.schema, id, ctx.now);
  await closeTasks(q, ctx, id, cancelled.length, cancelled.length);
  return { found: true, cancelled, stopping };
}
