import type { Queryable } from '../db/types.js';
import { channels } from './channels.js';

/** The statements of cancelling a workflow (cancel.ts runs them in order, in the caller's transaction). */

/** Cancels every task of a workflow not yet final and not running, recording why; returns their names. */
export async function cancelOpenTasks(q: Queryable, s: string, id: string, now: Date, why: { kind: 'cancel' | 'timeout'; message: string }): Promise<string[]> {
  const error = JSON.stringify([{ attempt: 0, at: now.toISOString(), ...why }]);
  const { rows } = await q.query<{ name: string }>(
    `UPDATE ${s}.tasks SET state = 'cancelled', finalized_at = $2, errors = errors || $3::jsonb
      WHERE workflow_id = $1 AND state IN ('pending', 'scheduled', 'available', 'retryable') RETURNING name`,
    [id, now, error],
  );
  return rows.map((r) => r.name);
}

/** Asks a workflow's running tasks to stop, and records the request on the workflow; returns the tasks asked. */
export async function requestStop(q: Queryable, s: string, schema: string, id: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(
    `UPDATE ${s}.tasks SET cancel_requested = true WHERE workflow_id = $1 AND state = 'running' RETURNING name`,
    [id],
  );
  await q.query(`UPDATE ${s}.workflows SET cancel_requested = true WHERE id = $1`, [id]);
  if (rows.length > 0) await q.query('SELECT pg_notify($1, $2)', [channels(schema).cancel, id]);
  return rows.map((r) => r.name);
}

/** Records that a workflow timed out: it ends failed, with this reason, once its last task is final. */
export async function markTimedOut(q: Queryable, s: string, id: string): Promise<void> {
  await q.query(`UPDATE ${s}.workflows SET end_reason = 'timeout' WHERE id = $1`, [id]);
}

/** Running workflows whose deadline passed, oldest deadline first (not those already timed out or cancelled). */
export async function pastDeadline(q: Queryable, s: string, now: Date, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT id FROM ${s}.workflows WHERE state = 'running' AND deadline_at IS NOT NULL AND deadline_at <= $1 AND end_reason IS NULL AND NOT cancel_requested
      ORDER BY deadline_at LIMIT $2`,
    [now, limit],
  );
  return rows.map((r) => r.id);
}

/** The nearest deadline of a running workflow, if any. */
export async function nextDeadline(q: Queryable, s: string): Promise<Date | null> {
  const { rows } = await q.query<{ at: Date | null }>(
    `SELECT min(deadline_at) AS at FROM ${s}.workflows WHERE state = 'running' AND deadline_at IS NOT NULL AND end_reason IS NULL AND NOT cancel_requested`,
  );
  return rows[0]?.at ? new Date(rows[0].at) : null;
}

/** A `cancel` effect for each running child (applied to each in a transaction of its own), notified. */
export async function cancelChildren(q: Queryable, s: string, schema: string, id: string, now: Date): Promise<void> {
  await q.query(
    `WITH c AS (
       INSERT INTO ${s}.effects (workflow_id, kind, created_at) SELECT id, 'cancel', $2
         FROM ${s}.workflows WHERE parent_id = $1 AND state = 'running' RETURNING workflow_id
     )
     SELECT pg_notify($3, workflow_id) FROM c`,
    [id, now, channels(schema).effect],
  );
}
