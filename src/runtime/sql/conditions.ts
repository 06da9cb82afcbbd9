import type { Queryable } from '../db/types.js';

/** The statements of conditional tasks (`when`): which are due a decision, and recording each decision. */

export interface ConditionTask {
  name: string;
  template: string;
  deps: string[];
  condition: string;
  has_wait: boolean;
  scheduled_at: Date;
}

/** Of some tasks of a workflow, those whose deps are all done and whose condition is not decided yet. */
export async function undecidedConditions(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<ConditionTask[]> {
  const { rows } = await q.query<ConditionTask>(
    `SELECT name, template, deps, condition, wait IS NOT NULL AS has_wait, scheduled_at FROM ${s}.tasks
      WHERE workflow_id = $1 AND name = ANY($2::text[]) AND lane = 'pending' AND deps_left = 0 AND condition IS NOT NULL AND condition_met IS NULL ORDER BY id`,
    [workflowId, names],
  );
  return rows;
}

/**
 * Records decisions: a task whose condition held goes on to its wait (still pending) or to its schedule; one
 * whose condition was false is skipped. Returns the skipped ones, with their dependents, as finalized.
 */
export async function recordConditions(
  q: Queryable,
  s: string,
  workflowId: string,
  now: Date,
  decisions: readonly { name: string; met: boolean; state: string }[],
): Promise<{ name: string; state: 'skipped'; dependents: string[] }[]> {
  if (decisions.length === 0) return [];
  const { rows } = await q.query<{ name: string; state: string; dependents: string[] }>(
    `UPDATE ${s}.tasks t SET condition_met = v.met, state = v.state, finalized_at = CASE WHEN v.state = 'skipped' THEN $2::timestamptz END
       FROM jsonb_to_recordset($3::jsonb) AS v(name text, met boolean, state text)
      WHERE t.workflow_id = $1 AND t.name = v.name AND t.state = 'pending'
      RETURNING t.name, t.state, t.dependents`,
    [workflowId, now, JSON.stringify(decisions)],
  );
  return rows.filter((r) => r.state === 'skipped').map((r) => ({ name: r.name, state: 'skipped' as const, dependents: r.dependents }));
}

/** Conditions that a crash left undecided with every dep done (the sweeper decides them). */
export async function strandedConditions(q: Queryable, s: string, limit = 100): Promise<{ workflow_id: string; name: string }[]> {
  const { rows } = await q.query<{ workflow_id: string; name: string }>(
    `SELECT workflow_id, name FROM ${s}.tasks WHERE lane = 'pending' AND condition IS NOT NULL AND condition_met IS NULL AND deps_left = 0 LIMIT $1`,
    [limit],
  );
  return rows;
}
