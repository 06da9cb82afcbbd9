import type { Queryable } from '../db/types.js';
import { forgetTaskWaits } from './retry.js';

/**
 * The statements of an operator's action on one task (braid task retry|skip|complete), its workflow's lock
 * held: incidents/task-actions.ts decides what runs.
 */

/** A task as an action reads it. */
export interface ActionTaskRow {
  name: string;
  template: string;
  state: string;
  attempt: number;
  worker_id: string | null;
  deps: string[];
  dependents: string[];
  held: boolean;
  scheduled_at: Date;
  queue: string;
}

/** Every task of a workflow (removed ones kept as history aside). */
export async function actionTasks(q: Queryable, s: string, workflowId: string): Promise<ActionTaskRow[]> {
  const { rows } = await q.query<ActionTaskRow>(
    `SELECT name, template, state, attempt, worker_id, deps, dependents, (wait IS NOT NULL OR condition IS NOT NULL) AS held, scheduled_at, queue
       FROM ${s}.tasks WHERE workflow_id = $1 AND removed_in IS NULL`,
    [workflowId],
  );
  return rows;
}

/** The error entry of a running attempt an operator ends: its worker's late end is then a no-op. */
const cancelledEntry = (message: string) =>
  `CASE WHEN t.state = 'running' THEN t.errors || jsonb_build_array(jsonb_build_object('attempt', t.attempt, 'at', $3::timestamptz,
     'kind', 'cancel', 'message', ${message}::text, 'worker', t.worker_id)) ELSE t.errors END`;

/** The task states an operator may take over (complete or skip): not final; running only when forced (the caller checks). */
const OPEN = `('pending', 'scheduled', 'available', 'retryable', 'running')`;

/**
 * Makes a task running for `operator` (a new attempt), ending an attempt a worker runs (recorded as cancelled
 * with `message`), so the completion statement can complete it; its waits' bookkeeping goes. The new attempt.
 */
export async function takeOver(
  q: Queryable,
  s: string,
  t: { workflowId: string; name: string; now: Date; operator: string; message: string },
): Promise<{ attempt: number; dependents: string[] } | undefined> {
  const { rows } = await q.query<{ attempt: number; dependents: string[] }>(
    `UPDATE ${s}.tasks t SET state = 'running', attempt = t.attempt + 1, started_at = $3, worker_id = $4, errors = ${cancelledEntry('$5')}
      WHERE t.workflow_id = $1 AND t.name = $2 AND t.state IN ${OPEN} RETURNING t.attempt, t.dependents`,
    [t.workflowId, t.name, t.now, t.operator, t.message],
  );
  if (rows[0]) await forgetTaskWaits(q, s, t.workflowId, [t.name]);
  return rows[0];
}

/** Ends a task skipped without running it (an attempt a worker runs is recorded as cancelled); its dependents for the advance wave. */
export async function skipOpenTask(
  q: Queryable,
  s: string,
  t: { workflowId: string; name: string; now: Date; message: string },
): Promise<{ dependents: string[] } | undefined> {
  const { rows } = await q.query<{ dependents: string[] }>(
    `UPDATE ${s}.tasks t SET state = 'skipped', finalized_at = $3, worker_id = NULL, errors = ${cancelledEntry('$4')}
      WHERE t.workflow_id = $1 AND t.name = $2 AND t.state IN ${OPEN} RETURNING t.dependents`,
    [t.workflowId, t.name, t.now, t.message],
  );
  if (rows[0]) await forgetTaskWaits(q, s, t.workflowId, [t.name]);
  return rows[0];
}

/** A task waiting out its retry backoff becomes available now. */
export async function retryNow(q: Queryable, s: string, workflowId: string, name: string, now: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE ${s}.tasks SET state = 'available', scheduled_at = $3 WHERE workflow_id = $1 AND name = $2 AND state = 'retryable'`,
    [workflowId, name, now],
  );
  return (rowCount ?? 0) > 0;
}

/** A running workflow's counters when tasks that had ended are open again (`failed` of them had failed). */
export async function reopenCounts(q: Queryable, s: string, workflowId: string, open: number, failed: number): Promise<void> {
  await q.query(`UPDATE ${s}.workflows SET tasks_open = tasks_open + $2, tasks_failed = greatest(tasks_failed - $3, 0) WHERE id = $1`, [
    workflowId,
    open,
    failed,
  ]);
}

/** Tells the worker running a task's attempt to abort it (the attempt has already ended in the database). */
export async function notifyTaskCancel(q: Queryable, channel: string, workflowId: string, name: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channel, `${workflowId} ${name}`]);
}
