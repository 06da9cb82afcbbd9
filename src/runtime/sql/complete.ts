import type { Queryable } from '../db/types.js';
import { lockWorkflows, notifyQueues, settle, type AdvanceContext } from './advance.js';

export interface Completion {
  workflowId: string;
  name: string;
  attempt: number;
  workerId: string;
  output: unknown;
}

/**
 * Completes a batch of task attempts in the caller's transaction: each task's completion, its output and
 * the advancement of its dependents commit together. Workflows are locked in id order first. An attempt
 * that is no longer running (timed out, rescued, cancelled, completed twice) is skipped: a late or duplicate
 * completion is a no-op. Returns the keys of the completions that took effect.
 */
export async function completeTasks(q: Queryable, ctx: AdvanceContext, items: readonly Completion[]): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  await lockWorkflows(q, ctx.s, items.map((i) => i.workflowId));
  const { rows } = await q.query<{ workflow_id: string; name: string; dependents: string[] }>(
    `UPDATE ${ctx.s}.tasks t SET state = 'completed', output = v.output, finalized_at = $2, worker_id = NULL
       FROM jsonb_to_recordset($1::jsonb) AS v(workflow_id text, name text, attempt int, worker_id text, output jsonb)
      WHERE t.workflow_id = v.workflow_id AND t.name = v.name AND t.state = 'running' AND t.attempt = v.attempt AND t.worker_id = v.worker_id
      RETURNING t.workflow_id, t.name, t.dependents`,
    [JSON.stringify(items.map((i) => ({ workflow_id: i.workflowId, name: i.name, attempt: i.attempt, worker_id: i.workerId, output: i.output ?? null }))), ctx.now],
  );
  const byWorkflow = new Map<string, { name: string; dependents: string[] }[]>();
  for (const r of rows) byWorkflow.set(r.workflow_id, [...(byWorkflow.get(r.workflow_id) ?? []), r]);
  const queues = new Set<string>();
  for (const [workflowId, done] of byWorkflow) {
    const result = await settle(q, ctx, workflowId, done.map((d) => ({ name: d.name, state: 'completed', dependents: d.dependents })));
    for (const queue of result.queues) queues.add(queue);
  }
  await notifyQueues(q, ctx.schema, queues);
  return new Set(rows.map((r) => `${r.workflow_id}\u0000${r.name}`));
}
