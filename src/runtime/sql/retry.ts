import { readyState, retrySelection, type RetryMode } from '../decide.js';
import type { Queryable } from '../db/types.js';
import { activateWaits } from '../waits.js';
import { lockWorkflows, notifyQueues, type AdvanceContext } from './advance.js';

export interface RetryResult {
  /** The workflow's new attempt. */
  attempt: number;
  /** The tasks that run again. */
  retried: string[];
}

export class WorkflowNotFinalError extends Error {
  readonly code = 'workflow_not_final' as const;
  constructor(id: string, state: string) {
    super(`workflow ${id} is ${state}: only a finalized workflow can be retried`);
    this.name = 'WorkflowNotFinal';
  }
}

/**
 * Starts a new attempt of a finalized workflow (caller's transaction): the selected tasks go back to pending
 * with their outputs, wait progress, evidence and timers cleared (reset_history also clears attempts and
 * errors, keeping max_attempts); signals stay, stamped with the attempt they belong to. Waits registered by
 * others on this workflow keep what they decided; undecided ones see it running again.
 */
export async function retryWorkflow(q: Queryable, ctx: AdvanceContext, id: string, options: { mode: RetryMode; resetHistory: boolean }): Promise<RetryResult | undefined> {
  const { s, now } = ctx;
  const w = (await lockWorkflows(q, s, [id])).get(id);
  if (!w) return undefined;
  if (w.state === 'running') throw new WorkflowNotFinalError(id, w.state);
  const { rows: tasks } = await q.query<{ name: string; state: string; deps: string[]; dependents: string[]; has_wait: boolean; scheduled_at: Date; queue: string }>(
    `SELECT name, state, deps, dependents, wait IS NOT NULL AS has_wait, scheduled_at, queue FROM ${s}.tasks WHERE workflow_id = $1`,
    [id],
  );
  const selected = retrySelection(tasks, options.mode);
  if (selected.size === 0) return { attempt: w.attempt, retried: [] };
  const attempt = w.attempt + 1;
  const rows = tasks
    .filter((t) => selected.has(t.name))
    .map((t) => {
      const depsLeft = t.deps.filter((d) => selected.has(d)).length;
      return { name: t.name, deps_left: depsLeft, state: readyState({ deps_left: depsLeft, has_wait: t.has_wait, scheduled_at: new Date(t.scheduled_at) }, now), queue: t.queue };
    });
  const stillFailed = tasks.filter((t) => !selected.has(t.name) && (t.state === 'cancelled' || t.state === 'discarded')).length;
  await q.query(
    `UPDATE ${s}.workflows SET attempt = $2, attempt_started_at = $3, state = 'running', finalized_at = NULL, output = NULL, output_error = NULL,
            cancel_requested = false, tasks_open = $4, tasks_failed = $5 WHERE id = $1`,
    [id, attempt, now, rows.length, stillFailed],
  );
  await q.query(
    `UPDATE ${s}.tasks t SET state = r.state, deps_left = r.deps_left, output = NULL, finalized_at = NULL, started_at = NULL, worker_id = NULL,
            cancel_requested = false, wait_started_at = NULL, wait_progress = NULL, wait_evidence = NULL,
            attempt = CASE WHEN $3 THEN 0 ELSE t.attempt END, errors = CASE WHEN $3 THEN '[]'::jsonb ELSE t.errors END
       FROM jsonb_to_recordset($2::jsonb) AS r(name text, state text, deps_left int)
      WHERE t.workflow_id = $1 AND t.name = r.name`,
    [id, JSON.stringify(rows), options.resetHistory],
  );
  const names = rows.map((r) => r.name);
  await q.query(`DELETE FROM ${s}.timers WHERE workflow_id = $1 AND task = ANY($2::text[])`, [id, names]);
  await q.query(`DELETE FROM ${s}.workflow_waiters WHERE workflow_id = $1 AND task = ANY($2::text[])`, [id, names]);
  const waiting = rows.filter((r) => r.deps_left === 0 && r.state === 'pending').map((r) => r.name);
  await activateWaits(q, ctx, id, waiting);
  await notifyQueues(q, ctx.schema, rows.filter((r) => r.state === 'available').map((r) => r.queue));
  return { attempt, retried: names };
}
