import type { Queryable } from '../db/types.js';

/** The statements of a debounced start (engine/debounce.ts). */

/** Serialises the starts of one workflow name and debounce key (held until the transaction ends). */
export async function lockDebounce(q: Queryable, name: string, key: string): Promise<void> {
  await q.query(`SELECT pg_advisory_xact_lock(hashtextextended('braid.debounce ' || $1::text || ' ' || $2::text, 0))`, [name, key]);
}

/** The run of that name and key still in its quiet period (none of its tasks started), locked; undefined when none. */
export async function pendingDebounced(q: Queryable, s: string, name: string, key: string, now: Date): Promise<{ id: string; created_at: Date } | undefined> {
  const { rows } = await q.query<{ id: string; created_at: Date }>(
    `SELECT id, created_at FROM ${s}.workflows
      WHERE name = $1 AND debounce_key = $2 AND state = 'running' AND debounce_until > $3 AND NOT cancel_requested
      ORDER BY created_at DESC LIMIT 1 FOR UPDATE`,
    [name, key, now],
  );
  return rows[0];
}

/**
 * Empties a pending run for its new plan: its tasks (and with them their timers) and its waits' registrations
 * go; its inputs, task counts and quiet period become the new start's.
 */
export async function resetDebounced(q: Queryable, s: string, id: string, w: { inputs: unknown; tasks: number; until: Date }): Promise<void> {
  await q.query(
    `WITH waiters AS (DELETE FROM ${s}.workflow_waiters WHERE workflow_id = $1),
          tasks AS (DELETE FROM ${s}.tasks WHERE workflow_id = $1)
     UPDATE ${s}.workflows SET inputs = $2, tasks_total = $3, tasks_open = $3, debounce_until = $4 WHERE id = $1`,
    [id, JSON.stringify(w.inputs), w.tasks, w.until],
  );
}

/** Records a new run's debounce key and quiet period. */
export async function markDebounced(q: Queryable, s: string, id: string, key: string, until: Date): Promise<void> {
  await q.query(`UPDATE ${s}.workflows SET debounce_key = $2, debounce_until = $3 WHERE id = $1`, [id, key, until]);
}
