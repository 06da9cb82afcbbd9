import type { Queryable } from '../db/types.js';
import { channels } from './channels.js';

/** The statements of cancelling a workflow (cancel.ts runs them in order, in the caller's transaction). */

/** Cancels every task of a workflow not yet final and not running; returns their names. */
export async function cancelOpenTasks(q: Queryable, s: string, id: string, now: Date): Promise<string[]> {
  const error = JSON.stringify([{ attempt: 0, at: now.toISOString(), kind: 'cancel', message: 'workflow cancelled' }]);
  const { rows } = await q.query<{ name: string }>(
    `UPDATE ${s}.tasks SET state = 'cancelled', finalized_at = $2, errors = errors || $3::jsonb
      WHERE workflow_id = $1 AND state IN ('pending', 'scheduled', 'available', 'retryable') RETURNING name`,
    [id, now, error],
  );
  return rows.map((r) => r.name);
}

/** Asks a workflow's running tasks to stop, and records the request on the workflow; returns the tasks asked. */
export async function requestStop(q: Queryable, s: string, schema: string, id: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(`UPDATE ${s}.tasks SET cancel_requested = true WHERE workflow_id = $1 AND state = 'running' RETURNING name`, [id]);
  await q.query(`UPDATE ${s}.workflows SET cancel_requested = true WHERE id = $1`, [id]);
  if (rows.length > 0) await q.query('SELECT pg_notify($1, $2)', [channels(schema).cancel, id]);
  return rows.map((r) => r.name);
}

/** A `cancel` effect for each running child (applied to each in a transaction of its own), notified. */
export async function cancelChildren(q: Queryable, s: string, schema: string, id: string, now: Date): Promise<void> {
  await q.query(
    `WITH c AS (
       INSERT INTO ${s}.effects (workflow_id, kind, created_at) SELECT id, 'cancel', $2 FROM ${s}.workflows WHERE parent_id = $1 AND state = 'running' RETURNING workflow_id
     )
     SELECT pg_notify($3, workflow_id) FROM c`,
    [id, now, channels(schema).effect],
  );
}
