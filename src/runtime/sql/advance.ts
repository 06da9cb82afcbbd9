import { depOutcome, finalWorkflowState, isFinal, readyState, type FinalState, type IgnoreFlags } from '../decide.js';
import type { Queryable } from '../db/types.js';
import type { DefinitionCache } from '../definition-cache.js';
import { evaluateOutput, type TaskResult } from '../output.js';
import { channels } from './channels.js';

/** What an advancing transaction needs: the schema, its one clock reading, and the definition cache. */
export interface AdvanceContext {
  s: string;
  schema: string;
  now: Date;
  definitions: DefinitionCache;
}

export interface Finalized {
  name: string;
  /** 'deleted': the row is gone (retention, or an operator); dependents treat it as a failed dep. */
  state: FinalState | 'deleted';
  /** The task's reverse edges, when the caller already has them. */
  dependents?: string[];
  /** A deleted row that had already finalized: it no longer counts in the open set. */
  alreadyClosed?: boolean;
}

export interface SettleResult {
  /** Queues that gained available tasks (to wake workers). */
  queues: Set<string>;
  /** Tasks whose deps are all satisfied and whose wait became active in this settle: to activate and evaluate. */
  waitsReady: string[];
  /** The workflow's final state when this settled it. */
  workflowState?: string;
}

interface DependentRow extends IgnoreFlags {
  name: string;
  deps_left: number;
  has_wait: boolean;
  scheduled_at: Date;
  queue: string;
}

/**
 * Applies finalized tasks of one workflow whose row lock the caller holds: each dependent either advances
 * (deps_left falls; at zero it becomes available, scheduled, or its wait becomes ready) or, for a failed dep
 * that its flags do not ignore, is cancelled, which cascades. Then the workflow's open-task counter falls,
 * and at zero the workflow finalizes. The waits it made ready are the caller's to activate: advanceWorkflow()
 * (waits.ts) is the sequence every path uses.
 */
export async function settle(q: Queryable, ctx: AdvanceContext, workflowId: string, finalized: Finalized[]): Promise<SettleResult> {
  const { s, now } = ctx;
  const result: SettleResult = { queues: new Set(), waitsReady: [] };
  let closed = 0;
  let failed = 0;
  let wave = finalized;
  while (wave.length > 0) {
    const counted = wave.filter((f) => !f.alreadyClosed);
    closed += counted.length;
    failed += counted.filter((f) => f.state !== 'completed').length;
    const missing = wave.filter((f) => f.dependents === undefined).map((f) => f.name);
    if (missing.length > 0) {
      const { rows } = await q.query<{ name: string; dependents: string[] }>(`SELECT name, dependents FROM ${s}.tasks WHERE workflow_id = $1 AND name = ANY($2::text[])`, [
        workflowId,
        missing,
      ]);
      const byName = new Map(rows.map((r) => [r.name, r.dependents]));
      wave = wave.map((f) => (f.dependents === undefined ? { ...f, dependents: byName.get(f.name) ?? [] } : f));
    }
    // a dep deleted after it had finalized was counted by its dependents then: now it can only fail them
    const edges = wave.flatMap((f) => (f.dependents ?? []).map((d) => ({ dep: f.name, depState: f.state, dependent: d, counted: f.alreadyClosed === true })));
    if (edges.length === 0) break;
    const { rows } = await q.query<DependentRow>(
      `SELECT name, deps_left, wait IS NOT NULL AS has_wait, scheduled_at, queue, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps
         FROM ${s}.tasks WHERE workflow_id = $1 AND name = ANY($2::text[]) AND state = 'pending'`,
      [workflowId, [...new Set(edges.map((e) => e.dependent))]],
    );
    const cancelled = new Map<string, string>();
    const advanced: { name: string; deps_left: number; state: string }[] = [];
    for (const row of rows) {
      const mine = edges.filter((e) => e.dependent === row.name);
      const failure = mine.find((e) => depOutcome(row, e.depState) === 'failed');
      if (failure) {
        cancelled.set(row.name, `dependency "${failure.dep}" was ${failure.depState}`);
        continue;
      }
      const depsLeft = row.deps_left - mine.filter((e) => !e.counted).length;
      const state = readyState({ deps_left: depsLeft, has_wait: row.has_wait, scheduled_at: new Date(row.scheduled_at) }, now);
      advanced.push({ name: row.name, deps_left: depsLeft, state });
      if (state === 'available') result.queues.add(row.queue);
      if (depsLeft === 0 && row.has_wait && depsLeft !== row.deps_left) result.waitsReady.push(row.name);
    }
    if (advanced.length > 0) {
      await q.query(
        `UPDATE ${s}.tasks t SET deps_left = v.deps_left, state = v.state
           FROM jsonb_to_recordset($2::jsonb) AS v(name text, deps_left int, state text)
          WHERE t.workflow_id = $1 AND t.name = v.name`,
        [workflowId, JSON.stringify(advanced)],
      );
    }
    wave = [];
    if (cancelled.size > 0) wave = await markCancelled(q, s, workflowId, now, cancelled);
  }
  result.workflowState = await closeTasks(q, ctx, workflowId, closed, failed);
  return result;
}

/** Cancels pending tasks for a reason each (recorded as a dependency error); returns them as finalized. */
export async function markCancelled(q: Queryable, s: string, workflowId: string, now: Date, reasons: ReadonlyMap<string, string>): Promise<Finalized[]> {
  const { rows } = await q.query<{ name: string; dependents: string[] }>(
    `UPDATE ${s}.tasks t SET state = 'cancelled', finalized_at = $2,
            errors = t.errors || jsonb_build_array(jsonb_build_object('attempt', 0, 'at', $2::timestamptz, 'kind', 'dependency', 'message', v.message))
       FROM jsonb_to_recordset($3::jsonb) AS v(name text, message text)
      WHERE t.workflow_id = $1 AND t.name = v.name AND t.state = 'pending'
      RETURNING t.name, t.dependents`,
    [workflowId, now, JSON.stringify([...reasons].map(([name, message]) => ({ name, message })))],
  );
  return rows.map((r) => ({ name: r.name, state: 'cancelled' as const, dependents: r.dependents }));
}

/** Deletes task rows of one workflow (lock held), returning them as finalized ('deleted') for settle(). */
export async function deleteTaskRows(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<Finalized[]> {
  const { rows } = await q.query<{ name: string; state: string; dependents: string[] }>(`DELETE FROM ${s}.tasks WHERE workflow_id = $1 AND name = ANY($2::text[]) RETURNING name, state, dependents`, [
    workflowId,
    names,
  ]);
  return rows.map((r) => ({ name: r.name, state: 'deleted' as const, dependents: r.dependents, alreadyClosed: isFinal(r.state) }));
}

/** Counts tasks out of the workflow's open set; finalizes the workflow when none is left. */
export async function closeTasks(q: Queryable, ctx: AdvanceContext, workflowId: string, closed: number, failed: number): Promise<string | undefined> {
  const { rows } = await q.query<WorkflowRow>(
    `UPDATE ${ctx.s}.workflows SET tasks_open = tasks_open - $2, tasks_failed = tasks_failed + $3 WHERE id = $1 RETURNING ${WORKFLOW_RETURNING}`,
    [workflowId, closed, failed],
  );
  const w = rows[0];
  if (!w || w.tasks_open > 0 || w.state !== 'running') return undefined;
  return (await finalizeWorkflows(q, ctx, [w])).get(w.id);
}

const WORKFLOW_RETURNING = 'id, name, definition_hash, state, tasks_open, tasks_failed, cancel_requested, output_template, inputs, created_at';

export interface WorkflowRow {
  id: string;
  name: string;
  definition_hash: string;
  state: string;
  tasks_open: number;
  tasks_failed: number;
  cancel_requested: boolean;
  output_template: unknown;
  inputs: unknown;
  created_at: Date;
}

/**
 * Workflows end: completed (with their output evaluated once), failed, or cancelled. Those without an
 * output template end in one statement; the others are evaluated one by one.
 */
export async function finalizeWorkflows(q: Queryable, ctx: AdvanceContext, workflows: readonly WorkflowRow[]): Promise<Map<string, string>> {
  const ended: { id: string; state: string; output: unknown; output_error: string | null }[] = [];
  for (const w of workflows) {
    const state = finalWorkflowState(w);
    let output: { output: unknown; error?: string } = { output: null };
    if (state === 'completed' && w.output_template !== null) {
      const def = await ctx.definitions.get(q, w.name, w.definition_hash);
      const { rows } = await q.query<TaskResult>(`SELECT name, template, idx, key, state, output FROM ${ctx.s}.tasks WHERE workflow_id = $1`, [w.id]);
      output = evaluateOutput(def, w.output_template, w, rows);
    }
    ended.push({ id: w.id, state, output: output.output, output_error: output.error ?? null });
  }
  if (ended.length === 0) return new Map();
  // workflows that others wait on leave a `finalized` effect, applied to each waiter in its own transaction
  await q.query(
    `WITH f AS (
       UPDATE ${ctx.s}.workflows w SET state = e.state, output = e.output, output_error = e.output_error, finalized_at = $2
         FROM jsonb_to_recordset($1::jsonb) AS e(id text, state text, output jsonb, output_error text)
        WHERE w.id = e.id
        RETURNING w.id, w.has_waiters
     ), effects AS (
       INSERT INTO ${ctx.s}.effects (workflow_id, kind, created_at) SELECT id, 'finalized', $2 FROM f WHERE has_waiters RETURNING workflow_id
     )
     SELECT pg_notify($3, workflow_id) FROM effects`,
    [JSON.stringify(ended), ctx.now, channels(ctx.schema).effect],
  );
  await q.query(`SELECT pg_notify($1, e) FROM unnest($2::text[]) AS e`, [channels(ctx.schema).workflow, ended.map((e) => `${e.id} ${e.state}`)]);
  return new Map(ended.map((e) => [e.id, e.state]));
}

export async function notifyQueues(q: Queryable, schema: string, queues: Iterable<string>): Promise<void> {
  const list = [...new Set(queues)];
  if (list.length > 0) await q.query(`SELECT pg_notify($1, queue) FROM unnest($2::text[]) AS queue`, [channels(schema).available, list]);
}

/** Takes the per-workflow locks, always in id order so concurrent batches cannot deadlock. */
export async function lockWorkflows(q: Queryable, s: string, ids: readonly string[]): Promise<Map<string, { state: string; cancel_requested: boolean; attempt: number }>> {
  const { rows } = await q.query<{ id: string; state: string; cancel_requested: boolean; attempt: number }>(
    `SELECT id, state, cancel_requested, attempt FROM ${s}.workflows WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
    [[...new Set(ids)]],
  );
  return new Map(rows.map((r) => [r.id, r]));
}
