import type { Queryable } from '../db/types.js';
import type { TaskRecord, WaitSnapshot, WorkflowRecord, WorkflowSummary } from '../wire.js';
import { TASK_COLUMNS } from './task-columns.js';

export type { TaskRecord, WaitSnapshot, WorkflowRecord, WorkflowSummary };

import type { PlanWait } from '../../compiler/plan.js';
import type { WaitEvidence, WaitProgressRecord } from '../wire.js';

const WORKFLOW_COLUMNS =
  'id, name, definition_hash, state, attempt, inputs, output, output_error, tasks_total, tasks_open, tasks_failed, ' +
  'cancel_requested, end_reason, deadline_at, parent_id, group_name, created_at, finalized_at';
export type TaskRow = Omit<TaskRecord, 'wait'> & {
  wait: PlanWait | null;
  wait_started_at: Date | null;
  wait_progress: WaitProgressRecord | null;
  wait_evidence: WaitEvidence | null;
};

export async function loadWorkflow(q: Queryable, s: string, id: string): Promise<WorkflowRecord | undefined> {
  const { rows } = await q.query<WorkflowRecord>(`SELECT ${WORKFLOW_COLUMNS} FROM ${s}.workflows WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * Serializes starts that choose the same workflow id, until the transaction ends: the second finds the
 * first's workflow rather than failing on its key.
 */
export async function lockWorkflowId(q: Queryable, schema: string, id: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`braid:start:${schema}:${id}`]);
}

/** What a workflow was started as: its name, and whether its inputs equal these (as JSON values); undefined: no such workflow. */
export async function startedAs(q: Queryable, s: string, id: string, inputs: unknown): Promise<{ name: string; same_inputs: boolean } | undefined> {
  const { rows } = await q.query<{ name: string; same_inputs: boolean }>(`SELECT name, inputs = $2::jsonb AS same_inputs FROM ${s}.workflows WHERE id = $1`, [
    id,
    JSON.stringify(inputs),
  ]);
  return rows[0];
}

/** Only a workflow's state (undefined: no such workflow): waiting polls it without reading inputs and output. */
export async function workflowState(q: Queryable, s: string, id: string): Promise<WorkflowRecord['state'] | undefined> {
  const { rows } = await q.query<{ state: WorkflowRecord['state'] }>(`SELECT state FROM ${s}.workflows WHERE id = $1`, [id]);
  return rows[0]?.state;
}

/** Tasks of one workflow in insertion order, paged (task-records.ts makes them records). */
export async function selectTasks(q: Queryable, s: string, id: string, page: { limit?: number; offset?: number } = {}): Promise<TaskRow[]> {
  const { rows } = await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM ${s}.tasks WHERE workflow_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, [
    id,
    page.limit ?? 10_000,
    page.offset ?? 0,
  ]);
  return rows;
}

export async function selectTasksByName(q: Queryable, s: string, id: string, names: readonly string[]): Promise<TaskRow[]> {
  const { rows } = await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM ${s}.tasks WHERE workflow_id = $1 AND name = ANY($2::text[]) ORDER BY id`, [id, names]);
  return rows;
}

/** Kinds that some live runtime process (heartbeat within `aliveMs`) can run. */
export async function liveKinds(q: Queryable, s: string, aliveMs: number, now: Date): Promise<Set<string>> {
  const { rows } = await q.query<{ kind: string }>(`SELECT DISTINCT unnest(kinds) AS kind FROM ${s}.workers WHERE stopped_at IS NULL AND heartbeat_at > $1`, [
    new Date(now.getTime() - aliveMs),
  ]);
  return new Set(rows.map((r) => r.kind));
}

export interface WorkflowListFilter {
  state?: WorkflowRecord['state'];
  name?: string;
  /** Continue after this row (from the previous page's last row), newest first. */
  after?: { created_at: string; id: string };
  limit: number;
}

/** Workflows newest first, filtered and paged by (created_at, id); `cursor` holds the exact created_at text. */
export async function listWorkflows(q: Queryable, s: string, f: WorkflowListFilter): Promise<(WorkflowSummary & { cursor_at: string })[]> {
  const { rows } = await q.query<WorkflowSummary & { cursor_at: string }>(
    `SELECT w.id, w.name, w.definition_hash, w.state, w.attempt, w.tasks_total, w.parent_id, w.created_at, w.finalized_at,
            w.created_at::text AS cursor_at,
            COALESCE((SELECT jsonb_object_agg(c.state, c.n) FROM (
               SELECT t.state, count(*)::int AS n FROM ${s}.tasks t WHERE t.workflow_id = w.id GROUP BY t.state) c), '{}') AS task_counts
       FROM ${s}.workflows w
      WHERE ($1::text IS NULL OR w.state = $1) AND ($2::text IS NULL OR w.name = $2)
        AND ($3::timestamptz IS NULL OR (w.created_at, w.id) < ($3::timestamptz, $4::text))
      ORDER BY w.created_at DESC, w.id DESC
      LIMIT $5`,
    [f.state ?? null, f.name ?? null, f.after?.created_at ?? null, f.after?.id ?? null, f.limit],
  );
  return rows;
}

/** What changing a workflow's tasks (an extension, a move to another version) starts from: its version, state and inputs. */
export interface WorkflowVersionRef {
  id: string;
  name: string;
  state: string;
  inputs: unknown;
  definition_hash: string;
  created_at: Date;
  /** Being cancelled, or past its deadline: its open tasks are ending. */
  ending: boolean;
}

export async function workflowVersionRef(q: Queryable, s: string, workflowId: string): Promise<WorkflowVersionRef | undefined> {
  const { rows } = await q.query<WorkflowVersionRef>(
    `SELECT id, name, state, inputs, definition_hash, created_at, (cancel_requested OR end_reason IS NOT NULL) AS ending FROM ${s}.workflows WHERE id = $1`,
    [workflowId],
  );
  return rows[0];
}
