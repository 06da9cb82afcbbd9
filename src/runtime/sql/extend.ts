import type { Queryable } from '../db/types.js';

/** The statements of extending a running workflow (extend.ts decides and orders them). */

/** Every task of the workflow: its name, template and state. */
export async function existingTasks(q: Queryable, s: string, workflowId: string): Promise<{ name: string; template: string; state: string }[]> {
  const { rows } = await q.query<{ name: string; template: string; state: string }>(`SELECT name, template, state FROM ${s}.tasks WHERE workflow_id = $1`, [
    workflowId,
  ]);
  return rows;
}

/** Existing tasks learn their new dependents (and whether one of them has a wait). */
export async function addDependents(
  q: Queryable,
  s: string,
  workflowId: string,
  reverse: readonly { name: string; names: string[]; wait: boolean }[],
): Promise<void> {
  await q.query(
    `UPDATE ${s}.tasks t SET dependents = t.dependents || ARRAY(SELECT jsonb_array_elements_text(r.names)), dependents_wait = t.dependents_wait OR r.wait
       FROM jsonb_to_recordset($2::jsonb) AS r(name text, names jsonb, wait boolean)
      WHERE t.workflow_id = $1 AND t.name = r.name`,
    [workflowId, JSON.stringify(reverse)],
  );
}

/** The workflow counts the added tasks as total and open. */
export async function countAdded(q: Queryable, s: string, workflowId: string, added: number): Promise<void> {
  await q.query(`UPDATE ${s}.workflows SET tasks_total = tasks_total + $2, tasks_open = tasks_open + $2 WHERE id = $1`, [workflowId, added]);
}
