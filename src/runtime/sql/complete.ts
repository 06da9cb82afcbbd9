import type { Queryable } from '../db/types.js';
import { closeTasksMany, notifyQueues, type AdvanceContext } from './advance.js';

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
  // One round trip: the workflows are locked (in id order, so batches cannot deadlock) before their tasks change.
  const { rows } = await q.query<{ workflow_id: string; name: string; dependents: string[] }>(
    `WITH locked AS (SELECT id FROM ${ctx.s}.workflows WHERE id = ANY($3::text[]) ORDER BY id FOR UPDATE)
     UPDATE ${ctx.s}.tasks t SET state = 'completed', output = v.output, finalized_at = $2, worker_id = NULL
       FROM jsonb_to_recordset($1::jsonb) AS v(workflow_id text, name text, attempt int, worker_id text, output jsonb)
      WHERE t.workflow_id = v.workflow_id AND t.name = v.name AND t.state = 'running' AND t.attempt = v.attempt AND t.worker_id = v.worker_id
        AND t.workflow_id IN (SELECT id FROM locked)
      RETURNING t.workflow_id, t.name, t.dependents`,
    [
      JSON.stringify(items.map((i) => ({ workflow_id: i.workflowId, name: i.name, attempt: i.attempt, worker_id: i.workerId, output: i.output ?? null }))),
      ctx.now,
      [...new Set(items.map((i) => i.workflowId))],
    ],
  );
  // A completed dep satisfies every dependent whatever its ignore flags, so dependents of the whole batch
  // advance in one statement. The CASE is decide.ts readyState() in SQL.
  const edges = rows.flatMap((r) => r.dependents.map((d) => ({ w: r.workflow_id, n: d })));
  const queues = new Set<string>();
  if (edges.length > 0) {
    const { rows: advanced } = await q.query<{ queue: string; state: string }>(
      `UPDATE ${ctx.s}.tasks t
          SET deps_left = t.deps_left - e.c,
              state = CASE WHEN t.deps_left - e.c = 0 AND t.wait IS NULL THEN (CASE WHEN t.scheduled_at > $2 THEN 'scheduled' ELSE 'available' END) ELSE t.state END
         FROM (SELECT x.w, x.n, count(*)::int AS c FROM jsonb_to_recordset($1::jsonb) AS x(w text, n text) GROUP BY x.w, x.n) e
        WHERE t.workflow_id = e.w AND t.name = e.n AND t.state = 'pending'
        RETURNING t.queue, t.state`,
      [JSON.stringify(edges), ctx.now],
    );
    for (const a of advanced) if (a.state === 'available') queues.add(a.queue);
  }
  const counts = new Map<string, { closed: number; failed: number }>();
  for (const r of rows) counts.set(r.workflow_id, { closed: (counts.get(r.workflow_id)?.closed ?? 0) + 1, failed: 0 });
  await closeTasksMany(q, ctx, counts);
  await notifyQueues(q, ctx.schema, queues);
  return new Set(rows.map((r) => `${r.workflow_id}\u0000${r.name}`));
}
