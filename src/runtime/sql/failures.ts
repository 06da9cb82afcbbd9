import type { Queryable } from '../db/types.js';

/**
 * What a failed run's on_failure reads of its failure: its attempt, the task that failed first (a cancelled
 * dependent is not it) and that task's last error; a run that timed out or had its output refused says so.
 */
export async function failureOf(q: Queryable, s: string, workflowId: string): Promise<{ attempt: number; task: string; error: string }> {
  const { rows } = await q.query<{ attempt: number; end_reason: string | null; output_error: string | null; task: string | null; error: string | null }>(
    `SELECT w.attempt, w.end_reason, w.output_error, t.name AS task, t.errors -> -1 ->> 'message' AS error
       FROM ${s}.workflows w
       LEFT JOIN LATERAL (SELECT name, errors FROM ${s}.task_view WHERE workflow_id = w.id AND state = 'discarded'
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

/** A failure counted in its group: when a run started now opens a window, the window's end. */
export interface GroupedFailure {
  name: string;
  key: string;
  now: Date;
  windowEndsAt: Date;
  /** What the window's run renders its inputs from, when this failure is only counted. */
  last: unknown;
}

/**
 * Counts a failure in its group: returns how many failures a run started now stands for (this one and any the
 * ended window counted), or 0 when the group's window is open and the failure waits for its end. The upsert
 * takes the group's row lock, so concurrent failures of one group count in turn.
 */
export async function countFailure(q: Queryable, s: string, g: GroupedFailure): Promise<number> {
  const { rows } = await q.query<{ started_count: number }>(
    `INSERT INTO ${s}.failure_groups AS g (name, group_key, window_ends_at, pending, started_count, last_failure)
     VALUES ($1, $2, $3, 0, 1, NULL)
     ON CONFLICT (name, group_key) DO UPDATE SET
       started_count = CASE WHEN g.window_ends_at <= $4 THEN g.pending + 1 ELSE 0 END,
       pending = CASE WHEN g.window_ends_at <= $4 THEN 0 ELSE g.pending + 1 END,
       last_failure = CASE WHEN g.window_ends_at <= $4 THEN NULL ELSE $5::jsonb END,
       window_ends_at = CASE WHEN g.window_ends_at <= $4 THEN $3 ELSE g.window_ends_at END
     RETURNING started_count`,
    [g.name, g.key, g.windowEndsAt, g.now, JSON.stringify(g.last)],
  );
  return rows[0]!.started_count;
}

export interface DueGroup {
  name: string;
  group_key: string;
  pending: number;
  last_failure: unknown;
}

/** Whether any group's window has ended. */
export async function anyGroupDue(q: Queryable, s: string, now: Date): Promise<boolean> {
  const { rows } = await q.query(`SELECT 1 FROM ${s}.failure_groups WHERE window_ends_at <= $1 LIMIT 1`, [now]);
  return rows.length > 0;
}

/** Groups whose window has ended, oldest first, locked for this pass (another leader's pass skips them). */
export async function dueGroups(q: Queryable, s: string, now: Date, limit: number): Promise<DueGroup[]> {
  const { rows } = await q.query<DueGroup>(
    `SELECT name, group_key, pending, last_failure FROM ${s}.failure_groups
      WHERE window_ends_at <= $1 ORDER BY window_ends_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

/** The window's counted failures started as one run: the group opens its next window with nothing counted. */
export async function reopenGroup(q: Queryable, s: string, g: DueGroup, windowEndsAt: Date): Promise<void> {
  await q.query(
    `UPDATE ${s}.failure_groups SET pending = 0, started_count = $3, last_failure = NULL, window_ends_at = $4
      WHERE name = $1 AND group_key = $2`,
    [g.name, g.group_key, g.pending, windowEndsAt],
  );
}

/** A group whose window ended with nothing counted ends (the next failure opens a new one). */
export async function dropGroup(q: Queryable, s: string, g: DueGroup): Promise<void> {
  await q.query(`DELETE FROM ${s}.failure_groups WHERE name = $1 AND group_key = $2`, [g.name, g.group_key]);
}
