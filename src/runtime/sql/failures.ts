import type { Queryable } from '../db/types.js';

/**
 * What a failed run's on_failure reads of its failure: its attempt, the task that failed first (a cancelled
 * dependent is not it) and that task's last error; a run that timed out or had its output refused says so.
 */
export async function failureOf(q: Queryable, s: string, workflowId: string): Promise<{ attempt: number; task: string; error: string }> {
  const { rows } = await q.query<{ attempt: number; end_reason: string | null; output_error: string | null; task: string | null; error: string | null }>(
    `SELECT w.attempt, w.end_reason, w.output_error, t.name AS task, t.errors -> -1 ->> 'message' AS error
       FROM ${s}.workflows w
       LEFT JOIN LATERAL (SELECT name, errors FROM ${s}.tasks WHERE workflow_id = w.id AND state = 'discarded'
                           ORDER BY finalized_at, name LIMIT 1) t ON true
      WHERE w.id = $1`,
    [workflowId],
  );
  const r = rows[0];
  const error = r?.error ?? r?.output_error ?? (r?.end_reason === 'timeout' ? 'the workflow timed out' : 'failed');
  return { attempt: r?.attempt ?? 1, task: r?.task ?? '', error };
}

/** Keeps a failed run past the runtime's retention: until `until`, or for good (null). */
export async function keepFailed(q: Queryable, s: string, workflowId: string, until: Date | null): Promise<void> {
  await q.query(`UPDATE ${s}.workflows SET keep_until = coalesce($2::timestamptz, 'infinity') WHERE id = $1`, [workflowId, until]);
}
