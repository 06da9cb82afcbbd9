import type { Queryable } from '../db/types.js';
import { closeTasks } from './settle.js';
import { lockWorkflows, type AdvanceContext } from '../sql/advance.js';
import { cancelChildren, cancelOpenTasks, requestStop } from '../sql/cancel.js';

/**
 * Cancels a workflow in the caller's transaction: every task not yet final and not running is cancelled;
 * running tasks are asked to stop (their handlers get an abort and may still finish), and so are the children
 * its start tasks started. The workflow ends as cancelled once its last task is final. Returns the names of
 * the tasks cancelled now and of those asked to stop.
 */
export async function cancelWorkflow(q: Queryable, ctx: AdvanceContext, id: string): Promise<{ found: boolean; cancelled: string[]; stopping: string[] }> {
  const w = (await lockWorkflows(q, ctx.s, [id])).get(id);
  if (!w) return { found: false, cancelled: [], stopping: [] };
  if (w.state !== 'running') return { found: true, cancelled: [], stopping: [] };
  const cancelled = await cancelOpenTasks(q, ctx.s, id, ctx.now);
  const stopping = await requestStop(q, ctx.s, ctx.schema, id);
  await cancelChildren(q, ctx.s, ctx.schema, id, ctx.now);
  await closeTasks(q, ctx, id, cancelled.length, cancelled.length);
  return { found: true, cancelled, stopping };
}
