import type { Queryable } from '../db/types.js';
import type { TaskRecord, WaitSnapshot, WorkflowRecord, WorkflowSearch, WorkflowSummary } from '../wire/index.js';
import { TASK_COLUMNS } from './task-columns.js';

export type { TaskRecord, WaitSnapshot, WorkflowRecord, WorkflowSummary };

import type { PlanWait } from '../../compiler/plan.js';
import type { WaitEvidence, WaitProgressRecord } from '../wire/index.js';

const WORKFLOW_COLUMNS =
  'id, name, definition_hash, state, attempt, inputs, output, output_error, tasks_total, tasks_open, tasks_failed, ' +
  'cancel_requested, end_reason, deadline_at, parent_id, group_name, schedule, debounce_until, created_at, finalized_at';
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
/**
 * Makes the transaction just begun read one snapshot (its first statement): a task's end and its workflow's,
 * committed together, are seen together by every read that follows.
 */
export async function readOneSnapshot(q: Queryable): Promise<void> {
  await q.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
}

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

/** The names and inputs of the workflows with these ids (those there). */
export async function storedInputs(q: Queryable, s: string, ids: readonly string[]): Promise<Map<string, { name: string; inputs: unknown }>> {
  const { rows } = await q.query<{ id: string; name: string; inputs: unknown }>(`SELECT id, name, inputs FROM ${s}.workflows WHERE id = ANY($1::text[])`, [
    ids,
  ]);
  return new Map(rows.map((r) => [r.id, { name: r.name, inputs: r.inputs }]));
}

/** Only a workflow's state (undefined: no such workflow): waiting polls it without reading inputs and output. */
export async function workflowState(q: Queryable, s: string, id: string): Promise<WorkflowRecord['state'] | undefined> {
  const { rows } = await q.query<{ state: WorkflowRecord['state'] }>(`SELECT state FROM ${s}.workflows WHERE id = $1`, [id]);
  return rows[0]?.state;
}

/**
 * Marks a running workflow watched: its end is then announced on the workflow channel (migration 044), which a
 * waiter listens on. Nothing for a workflow already ended or watched.
 */
export async function watchWorkflow(q: Queryable, s: string, id: string): Promise<void> {
  await q.query(`UPDATE ${s}.workflows SET watched = true WHERE id = $1 AND state = 'running' AND NOT watched`, [id]);
}

/** Tasks of one workflow in insertion order, paged (task-records.ts makes them records). */
export async function selectTasks(q: Queryable, s: string, id: string, page: { limit?: number; offset?: number } = {}): Promise<TaskRow[]> {
  const { rows } = await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM ${s}.task_view WHERE workflow_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, [
    id,
    page.limit ?? 10_000,
    page.offset ?? 0,
  ]);
  return rows;
}

export async function selectTasksByName(q: Queryable, s: string, id: string, names: readonly string[]): Promise<TaskRow[]> {
  const { rows } = await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM ${s}.task_view WHERE workflow_id = $1 AND name = ANY($2::text[]) ORDER BY id`, [
    id,
    names,
  ]);
  return rows;
}

/** Kinds that some live runtime process (heartbeat within `aliveMs`) can run. */
export async function liveKinds(q: Queryable, s: string, aliveMs: number, now: Date): Promise<Set<string>> {
  const { rows } = await q.query<{ kind: string }>(`SELECT DISTINCT unnest(kinds) AS kind FROM ${s}.workers WHERE stopped_at IS NULL AND heartbeat_at > $1`, [
    new Date(now.getTime() - aliveMs),
  ]);
  return new Set(rows.map((r) => r.kind));
}

export interface WorkflowListFilter extends Omit<WorkflowSearch, 'cursor' | 'limit'> {
  /** Continue after this row (from the previous page's last row), newest first. */
  after?: { created_at: string; id: string };
  limit: number;
}

/** Escapes LIKE's wildcards, so a prefix or a text is matched as written. */
const likeText = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** An inputs filter as jsonb containment: `a.b=v` is {"a":{"b":"v"}}, and when v is JSON (42, true) also {"a":{"b":42}}. */
function inputsContainment(path: string, value: string): string[] {
  const nest = (v: unknown) => JSON.stringify(path.split('.').reduceRight<unknown>((inner, key) => ({ [key]: inner }), v));
  const out = [nest(value)];
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed !== 'string') out.push(nest(parsed));
  } catch {
    // not JSON: the text alone
  }
  return out;
}

/**
 * The conditions of a workflow search over `w` (a workflows row), each with its parameter added through `p`:
 * what the list and a bulk operation's selection (sql/bulk.ts) filter by.
 */
export function searchConditions(s: string, f: Omit<WorkflowSearch, 'cursor' | 'limit'>, p: (v: unknown) => string): string[] {
  const where: string[] = [];
  if (f.state) where.push(`w.state = ${p(f.state)}`);
  if (f.name) where.push(`w.name = ${p(f.name)}`);
  if (f.version) where.push(`w.definition_hash LIKE ${p(`${likeText(f.version)}%`)}`);
  if (f.idPrefix) where.push(`w.id LIKE ${p(`${likeText(f.idPrefix)}%`)}`);
  for (const i of f.inputs ?? [])
    where.push(
      `(${inputsContainment(i.path, i.value)
        .map((c) => `w.inputs @> ${p(c)}::jsonb`)
        .join(' OR ')})`,
    );
  if (f.createdAfter) where.push(`w.created_at >= ${p(f.createdAfter)}::timestamptz`);
  if (f.createdBefore) where.push(`w.created_at < ${p(f.createdBefore)}::timestamptz`);
  if (f.finalizedAfter) where.push(`w.finalized_at >= ${p(f.finalizedAfter)}::timestamptz`);
  if (f.finalizedBefore) where.push(`w.finalized_at < ${p(f.finalizedBefore)}::timestamptz`);
  if (f.topLevel) where.push('w.parent_id IS NULL');
  if (f.parentId) where.push(`w.parent_id = ${p(f.parentId)}`);
  if (f.error) {
    const text = p(`%${likeText(f.error)}%`);
    where.push(
      `(w.output_error ILIKE ${text}
        OR EXISTS (SELECT 1 FROM ${s}.task_view t WHERE t.workflow_id = w.id AND t.errors <> '[]'::jsonb AND t.errors::text ILIKE ${text}))`,
    );
  }
  return where;
}

/**
 * Workflows newest first, filtered and paged by (created_at, id); `cursor` holds the exact created_at text.
 * Each filter is a condition with its own parameter; the indexes of migration 018 serve the id prefix
 * (text_pattern_ops), the inputs (GIN, jsonb_path_ops) and the top-level list.
 */
export async function listWorkflows(q: Queryable, s: string, f: WorkflowListFilter): Promise<(WorkflowSummary & { cursor_at: string })[]> {
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = searchConditions(s, f, p);
  if (f.after) where.push(`(w.created_at, w.id) < (${p(f.after.created_at)}::timestamptz, ${p(f.after.id)}::text)`);
  const { rows } = await q.query<WorkflowSummary & { cursor_at: string }>(
    `SELECT w.id, w.name, w.definition_hash, w.state, w.attempt, w.tasks_total, w.parent_id, w.created_at, w.finalized_at,
            w.created_at::text AS cursor_at,
            COALESCE((SELECT jsonb_object_agg(c.state, c.n) FROM (
               SELECT t.state, count(*)::int AS n FROM ${s}.task_view t WHERE t.workflow_id = w.id GROUP BY t.state) c), '{}') AS task_counts
       FROM ${s}.workflows w
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY w.created_at DESC, w.id DESC
      LIMIT ${p(f.limit)}`,
    params,
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

/** The stored traceparents of some workflows' current attempts (the parents and links of later spans). */
export async function workflowTraceContexts(q: Queryable, s: string, ids: readonly string[]): Promise<Map<string, string | null>> {
  const { rows } = await q.query<{ id: string; trace_context: string | null }>(`SELECT id, trace_context FROM ${s}.workflows WHERE id = ANY($1::text[])`, [
    ids,
  ]);
  return new Map(rows.map((r) => [r.id, r.trace_context]));
}

/** A workflow's name and stored traceparent (a retry's span names the attempt before it). */
export async function workflowTraceRow(q: Queryable, s: string, id: string): Promise<{ name: string; trace_context: string | null } | undefined> {
  const { rows } = await q.query<{ name: string; trace_context: string | null }>(`SELECT name, trace_context FROM ${s}.workflows WHERE id = $1`, [id]);
  return rows[0];
}
