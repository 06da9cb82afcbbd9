import type { Queryable } from '../db/types.js';
import type { PauseRecord, PauseScope } from '../wire/index.js';

/**
 * Pauses (braid pause): rows of the pauses table, each holding the tasks of a queue, a kind or a workflow name
 * from being claimed. The claims read them in the same statement that claims (fetch.ts openSql, the completion's
 * eager claim, flow_candidates), so a pause committed holds every claim that starts after it.
 */

/**
 * Whether the workflow of task row `t` has a paused name. The first test reads no row of the task, so a
 * statement evaluates it once: while no workflow name is paused, nothing is looked up per task.
 */
export function workflowPausedSql(s: string, t: string): string {
  return `(EXISTS (SELECT 1 FROM ${s}.pauses WHERE scope = 'workflow')
           AND EXISTS (SELECT 1 FROM ${s}.workflows pw JOIN ${s}.pauses pp ON pp.scope = 'workflow' AND pp.target = pw.name WHERE pw.id = ${t}.workflow_id))`;
}

/** Whether task row `t` is held by a pause: its queue, its kind or its workflow's name is paused. Each list read once a statement. */
export function pausedTaskSql(s: string, t: string): string {
  return `(${t}.queue = ANY(ARRAY(SELECT target FROM ${s}.pauses WHERE scope = 'queue'))
           OR ${t}.kind = ANY(ARRAY(SELECT target FROM ${s}.pauses WHERE scope = 'kind'))
           OR ${workflowPausedSql(s, t)})`;
}

const COLUMNS = 'scope, target, actor, reason, paused_at';

/** Pauses (or re-pauses, with the new actor and reason) one scope; the row as it is now. */
export async function insertPause(q: Queryable, s: string, p: Omit<PauseRecord, 'paused_at'>, at: Date): Promise<PauseRecord> {
  const { rows } = await q.query<PauseRecord>(
    `INSERT INTO ${s}.pauses (scope, target, actor, reason, paused_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (scope, target) DO UPDATE SET actor = excluded.actor, reason = excluded.reason
     RETURNING ${COLUMNS}`,
    [p.scope, p.target, p.actor, p.reason, at],
  );
  return rows[0];
}

/** Removes one pause; the row it was, or undefined when nothing was paused there. */
export async function deletePause(q: Queryable, s: string, scope: PauseScope, target: string): Promise<PauseRecord | undefined> {
  const { rows } = await q.query<PauseRecord>(`DELETE FROM ${s}.pauses WHERE scope = $1 AND target = $2 RETURNING ${COLUMNS}`, [scope, target]);
  return rows[0];
}

/** Every pause, by scope and target. */
export async function listPauses(q: Queryable, s: string): Promise<PauseRecord[]> {
  const { rows } = await q.query<PauseRecord>(`SELECT ${COLUMNS} FROM ${s}.pauses ORDER BY scope, target`);
  return rows;
}

/** The pauses that hold one workflow's tasks: its name's, and those of its tasks' queues and kinds. */
export async function workflowPauses(q: Queryable, s: string, workflowId: string): Promise<PauseRecord[]> {
  const { rows } = await q.query<PauseRecord>(
    `SELECT ${COLUMNS} FROM ${s}.pauses p
      WHERE (p.scope = 'workflow' AND p.target = (SELECT name FROM ${s}.workflows WHERE id = $1))
         OR (p.scope = 'queue' AND p.target IN (SELECT queue FROM ${s}.task_view WHERE workflow_id = $1))
         OR (p.scope = 'kind' AND p.target IN (SELECT kind FROM ${s}.task_view WHERE workflow_id = $1))
      ORDER BY scope, target`,
    [workflowId],
  );
  return rows;
}

/** Wakes the workers of every queue with work waiting (a resume is rare; which queues a kind or a name uses is not kept). */
export async function wakeQueuesWithWork(q: Queryable, s: string, channel: string): Promise<void> {
  await q.query(
    `SELECT pg_notify($1, queue) FROM (SELECT queue FROM ${s}.tasks WHERE lane IN ('available', 'flow')
                                        UNION SELECT queue FROM ${s}.task_ranges WHERE state = 'available') q`,
    [channel],
  );
}
