import type { TaskResult } from '../core/scopes.js';
import type { Queryable } from '../db/types.js';
import type { FinalState } from '../engine/decide.js';

/**
 * The statements that advance a workflow beside the wave (advance-wave.ts): its lock, ending pending tasks, its
 * open-task counters and its end.
 */

/** What a statement of an advancing transaction needs: the schema (named for NOTIFY, quoted for SQL) and its one clock reading. */
export interface StatementContext {
  s: string;
  schema: string;
  now: Date;
}

export interface Finalized {
  name: string;
  /** 'deleted': the row is gone (retention, or an operator); dependents treat it as a failed dep. */
  state: FinalState | 'deleted';
  /** The task's reverse edges, when the caller already has them. */
  dependents?: string[];
  /** A deleted row that had already finalized: it no longer counts in the open set (nor, unless said below, in its dependents'). */
  alreadyClosed?: boolean;
  /** Whether its dependents counted it already (default: as alreadyClosed); false for a final dep a move gave new dependents. */
  dependentsCounted?: boolean;
}

export interface SettleResult {
  /** Tasks whose deps are all satisfied and whose wait became active in this settle: to activate and evaluate. */
  waitsReady: string[];
  /** The workflow's final state when this settled it. */
  workflowState?: string;
}

/** Cancels pending tasks for a reason each (recorded as a dependency error); returns them as finalized. */
export async function markCancelled(q: Queryable, s: string, workflowId: string, now: Date, reasons: ReadonlyMap<string, string>): Promise<Finalized[]> {
  return endPending(q, s, workflowId, now, 'cancelled', 'dependency', reasons);
}

/**
 * Ends pending tasks of one workflow in a final state without running them: cancelled or discarded (the reason
 * recorded as an error of `kind`), or skipped (a reason is recorded only for a failure). Returns them as finalized.
 */
export async function endPending(
  q: Queryable,
  s: string,
  workflowId: string,
  now: Date,
  state: 'cancelled' | 'discarded' | 'skipped',
  kind: string,
  reasons: ReadonlyMap<string, string>,
): Promise<Finalized[]> {
  if (reasons.size === 0) return [];
  const { rows } = await q.query<{ name: string; dependents: string[] }>(
    `UPDATE ${s}.tasks t SET state = $4, finalized_at = $2,
            errors = CASE WHEN $4 = 'skipped' THEN t.errors
                          ELSE t.errors || jsonb_build_array(jsonb_build_object('attempt',
                            0, 'at', $2::timestamptz, 'kind', $5::text, 'message', v.message)) END
       FROM jsonb_to_recordset($3::jsonb) AS v(name text, message text)
      WHERE t.workflow_id = $1 AND t.name = v.name AND t.state = 'pending'
      RETURNING t.name, t.dependents`,
    [workflowId, now, JSON.stringify([...reasons].map(([name, message]) => ({ name, message }))), state, kind],
  );
  return rows.map((r) => ({ name: r.name, state, dependents: r.dependents }));
}

/** Deletes task rows of one workflow (lock held), returning what each was. */
export async function deleteTaskRows(
  q: Queryable,
  s: string,
  workflowId: string,
  names: readonly string[],
): Promise<{ name: string; state: string; dependents: string[] }[]> {
  const { rows } = await q.query<{ name: string; state: string; dependents: string[] }>(
    `DELETE FROM ${s}.tasks WHERE workflow_id = $1 AND name = ANY($2::text[]) RETURNING name, state, dependents`,
    [workflowId, names],
  );
  return rows;
}

/** The columns of a WorkflowRow. */
export const WORKFLOW_ROW_COLUMNS =
  'id, name, definition_hash, state, tasks_open, tasks_failed, cancel_requested, end_reason, output_template, inputs, created_at';

export interface WorkflowRow {
  id: string;
  name: string;
  definition_hash: string;
  state: string;
  tasks_open: number;
  tasks_failed: number;
  cancel_requested: boolean;
  end_reason: string | null;
  output_template: unknown;
  inputs: unknown;
  created_at: Date;
}

/** Counts tasks out of the workflow's open set (and into its failed count); returns the workflow after. */
export async function countClosed(q: Queryable, s: string, workflowId: string, closed: number, failed: number): Promise<WorkflowRow | undefined> {
  const { rows } = await q.query<WorkflowRow>(
    `UPDATE ${s}.workflows SET tasks_open = tasks_open - $2, tasks_failed = tasks_failed + $3 WHERE id = $1 RETURNING ${WORKFLOW_ROW_COLUMNS}`,
    [workflowId, closed, failed],
  );
  return rows[0];
}

/** What an output template reads: every task's state and output. */
export async function taskResults(q: Queryable, s: string, workflowId: string): Promise<TaskResult[]> {
  const { rows } = await q.query<TaskResult>(`SELECT name, template, idx, key, state, output FROM ${s}.task_view WHERE workflow_id = $1`, [workflowId]);
  return rows;
}

/**
 * Workflows end, each in its state with its output. The workflows table's trigger (migration 015) notifies the
 * end, and for those others wait on leaves a `finalized` effect (applied to each waiter in its own transaction).
 */
export async function endWorkflows(
  q: Queryable,
  ctx: StatementContext,
  ended: readonly { id: string; state: string; output: unknown; output_error: string | null }[],
): Promise<void> {
  if (ended.length === 0) return;
  await q.query(
    `UPDATE ${ctx.s}.workflows w SET state = e.state, output = e.output, output_error = e.output_error, finalized_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS e(id text, state text, output jsonb, output_error text)
      WHERE w.id = e.id`,
    [JSON.stringify(ended), ctx.now],
  );
}

/**
 * Takes the per-workflow locks, always in id order so concurrent batches cannot deadlock: the lock every writer
 * of a workflow's tasks holds (lock_workflows(), migration 046), which gives each item of its ranges a row first.
 */
export async function lockWorkflows(
  q: Queryable,
  s: string,
  ids: readonly string[],
  options: { taskRows?: boolean } = {},
): Promise<Map<string, { state: string; cancel_requested: boolean; attempt: number }>> {
  const { rows } = await q.query<{ id: string; state: string; cancel_requested: boolean; attempt: number }>(
    `SELECT id, state, cancel_requested, attempt FROM ${s}.lock_workflows($1::text[], $2)`,
    [[...new Set(ids)], options.taskRows ?? true],
  );
  return new Map(rows.map((r) => [r.id, r]));
}
