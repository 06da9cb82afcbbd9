import type { Queryable } from '../db/types.js';

/** The statements of a whole-workflow retry (retry.ts decides what runs again). */

export interface RetryTaskRow {
  name: string;
  state: string;
  deps: string[];
  dependents: string[];
  held: boolean;
  scheduled_at: Date;
  queue: string;
}

export async function retryCandidates(q: Queryable, s: string, workflowId: string): Promise<RetryTaskRow[]> {
  // a task that runs again decides its condition again: held whatever the last attempt decided; a removed
  // task kept as history is not the version's to run
  const { rows } = await q.query<RetryTaskRow>(
    `SELECT name, state, deps, dependents, (wait IS NOT NULL OR condition IS NOT NULL) AS held, scheduled_at, queue FROM ${s}.tasks
      WHERE workflow_id = $1 AND removed_in IS NULL`,
    [workflowId],
  );
  return rows;
}

/**
 * Starts a workflow's new attempt: the workflow running again with its counters, the selected tasks back to
 * their first state with outputs, wait progress, evidence, timers and wait registrations cleared (with
 * `resetHistory`, attempts and errors too).
 */
export async function restartWorkflow(
  q: Queryable,
  s: string,
  w: { id: string; attempt: number; now: Date; open: number; failed: number; traceContext: string | null },
  tasks: readonly { name: string; state: string; deps_left: number }[],
  resetHistory: boolean,
): Promise<void> {
  await q.query(
    `UPDATE ${s}.workflows SET attempt = $2, attempt_started_at = $3, state = 'running', finalized_at = NULL, output = NULL, output_error = NULL,
            cancel_requested = false, tasks_open = $4, tasks_failed = $5, end_reason = NULL, keep_until = NULL,
            deadline_at = $3::timestamptz + timeout_ms * interval '1 millisecond', trace_context = COALESCE($6, trace_context) WHERE id = $1`,
    [w.id, w.attempt, w.now, w.open, w.failed, w.traceContext],
  );
  await resetTasks(q, s, w.id, tasks, resetHistory);
}

/**
 * Puts tasks of one workflow back to their first state (given, with deps_left) with outputs, wait progress,
 * evidence, timers and wait registrations cleared (with `resetHistory`, attempts and errors too).
 */
export async function resetTasks(
  q: Queryable,
  s: string,
  workflowId: string,
  tasks: readonly { name: string; state: string; deps_left: number }[],
  resetHistory: boolean,
): Promise<void> {
  await q.query(
    `UPDATE ${s}.tasks t
        SET state = r.state, deps_left = r.deps_left, output = NULL, output_bytes = NULL, finalized_at = NULL, started_at = NULL,
            worker_id = NULL, completed_by = NULL, deferred = t.deferred - 'rendered',
            cancel_requested = false, condition_met = NULL, wait_started_at = NULL, wait_progress = NULL, wait_evidence = NULL,
            attempt = CASE WHEN $3 THEN 0 ELSE t.attempt END, errors = CASE WHEN $3 THEN '[]'::jsonb ELSE t.errors END
       FROM jsonb_to_recordset($2::jsonb) AS r(name text, state text, deps_left int)
      WHERE t.workflow_id = $1 AND t.name = r.name`,
    [workflowId, JSON.stringify(tasks), resetHistory],
  );
  await forgetTaskWaits(
    q,
    s,
    workflowId,
    tasks.map((t) => t.name),
  );
}

/** Deletes the timers and the registrations on other workflows of tasks whose waits end or start again. */
export async function forgetTaskWaits(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<void> {
  await q.query(`DELETE FROM ${s}.timers WHERE workflow_id = $1 AND task = ANY($2::text[])`, [workflowId, names]);
  await q.query(`DELETE FROM ${s}.workflow_waiters WHERE workflow_id = $1 AND task = ANY($2::text[])`, [workflowId, names]);
}
