import type { PlanWait } from '../../compiler/plan.js';
import type { Queryable } from '../db/types.js';
import type { UpgradeRecord, WaitProgressRecord } from '../wire/index.js';
import type { TaskRow } from './insert.js';

export type { UpgradeRecord };

/** The statements of moving a workflow to another version (engine/upgrade.ts decides what they apply). */

/** A task row as a move reads it: what it is, and how far its wait has got. */
export interface MoveTaskRow {
  name: string;
  template: string;
  kind: string;
  state: string;
  wait: PlanWait | null;
  condition: string | null;
  wait_started_at: Date | null;
  wait_progress: WaitProgressRecord | null;
}

/**
 * Every task of the workflow; with `lock`, each row locked too, so no worker claims one while it is moved (a
 * claim skips locked rows) and what is read as not started stays so until the move commits. Without (a dry run),
 * read through task_view: ranged items are given rows only under the workflow's lock (lock_workflows()).
 */
export async function moveTaskRows(q: Queryable, s: string, workflowId: string, lock: boolean): Promise<MoveTaskRow[]> {
  const { rows } = await q.query<MoveTaskRow>(
    `SELECT name, template, kind, state, wait, condition, wait_started_at, wait_progress
       FROM ${s}.${lock ? 'tasks' : 'task_view'} WHERE workflow_id = $1 ORDER BY id${lock ? ' FOR UPDATE' : ''}`,
    [workflowId],
  );
  return rows;
}

/**
 * Renames tasks, in two steps (through names no task can have) so that swaps and chains of renames never
 * meet a name still taken; their timers follow (ON UPDATE CASCADE).
 */
export async function renameTasks(q: Queryable, s: string, workflowId: string, renames: readonly { from: string; to: string }[]): Promise<void> {
  if (renames.length === 0) return;
  const json = JSON.stringify(renames);
  await q.query(
    `UPDATE ${s}.tasks t SET name = ' moving ' || r."to" FROM jsonb_to_recordset($2::jsonb) AS r("from" text, "to" text)
      WHERE t.workflow_id = $1 AND t.name = r."from"`,
    [workflowId, json],
  );
  await q.query(`UPDATE ${s}.tasks t SET name = substr(t.name, 9) WHERE t.workflow_id = $1 AND t.name LIKE ' moving %'`, [workflowId]);
}

/**
 * Removed tasks kept as history: marked with the version that removed them (the first one, when moved again),
 * their dependents dropped (nothing of the target waits on them); `cancelled` ones end cancelled first.
 */
export async function retireRemovedTasks(
  q: Queryable,
  s: string,
  workflowId: string,
  hash: string,
  history: readonly string[],
  cancelled: readonly string[],
  now: Date,
): Promise<void> {
  if (history.length + cancelled.length === 0) return;
  await q.query(
    `UPDATE ${s}.tasks t SET removed_in = coalesce(t.removed_in, $2), dependents = '{}', dependents_wait = false,
            state = CASE WHEN t.name = ANY($4::text[]) THEN 'cancelled' ELSE t.state END,
            finalized_at = CASE WHEN t.name = ANY($4::text[]) THEN $5 ELSE t.finalized_at END,
            errors = CASE WHEN t.name = ANY($4::text[]) THEN t.errors || jsonb_build_array(jsonb_build_object('attempt', 0, 'at',
              $5::timestamptz, 'kind', 'upgrade', 'message', 'cancelled by braid upgrade --cancel-removed: version ' || left($2, 12) || ' has no such task'))
              ELSE t.errors END
      WHERE t.workflow_id = $1 AND (t.name = ANY($3::text[]) OR t.name = ANY($4::text[]))`,
    [workflowId, hash, history, cancelled, now],
  );
}

/** Started tasks keep their run and learn the target's edges. */
export async function relinkTasks(
  q: Queryable,
  s: string,
  workflowId: string,
  rows: readonly { name: string; deps: string[]; dependents: string[]; dependents_wait: boolean }[],
): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE ${s}.tasks t SET deps = ARRAY(SELECT jsonb_array_elements_text(x.deps)), dependents = ARRAY(SELECT
      jsonb_array_elements_text(x.dependents)), dependents_wait = x.dependents_wait, removed_in = NULL
       FROM jsonb_to_recordset($2::jsonb) AS x(name text, deps jsonb, dependents jsonb, dependents_wait boolean)
      WHERE t.workflow_id = $1 AND t.name = x.name`,
    [workflowId, JSON.stringify(rows)],
  );
}

/** A task not started as the target defines it; `keep_hold` keeps a resolved wait and a decided condition that did not change. */
export type RedefinedRow = TaskRow & { keep_hold: boolean; wait_started_at: string | null };

/** Tasks not yet started take the target's definition, state and deps left; their wait starts over unless kept. */
export async function redefineTasks(q: Queryable, s: string, workflowId: string, rows: readonly RedefinedRow[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE ${s}.tasks t SET template = x.template, idx = x.idx, key = x.key, kind = x.kind, queue = x.queue, priority = x.priority, state = x.state,
            max_attempts = x.max_attempts, args = coalesce(x.args, 'null'::jsonb), deps = ARRAY(SELECT jsonb_array_elements_text(x.deps)),
            dependents = ARRAY(SELECT jsonb_array_elements_text(x.dependents)), deps_left = x.deps_left, scheduled_at = x.scheduled_at,
            timeout_ms = x.timeout_ms, retry = x.retry, ignore_cancelled_deps = x.ignore_cancelled_deps, ignore_discarded_deps = x.ignore_discarded_deps,
            ignore_deleted_deps = x.ignore_deleted_deps, ignore_skipped_deps = coalesce(x.ignore_skipped_deps, false), wait = x.wait, start = x.start,
            metadata = coalesce(x.metadata, '{}'::jsonb), description = x.description, dependents_wait = x.dependents_wait,
            wait_keys = ARRAY(SELECT jsonb_array_elements_text(x.wait_keys)), condition = x.condition, deferred = x.deferred,
            condition_met = CASE WHEN x.keep_hold THEN t.condition_met END, wait_progress = CASE WHEN x.keep_hold THEN t.wait_progress END,
            wait_evidence = CASE WHEN x.keep_hold THEN t.wait_evidence END, wait_started_at = x.wait_started_at
       FROM jsonb_to_recordset($2::jsonb) AS x(name text, template text, idx int, key text, kind text, queue text, priority int, state text,
            max_attempts int, args jsonb, deps jsonb, dependents jsonb, deps_left int, scheduled_at timestamptz, timeout_ms int, retry jsonb,
            ignore_cancelled_deps boolean, ignore_discarded_deps boolean, ignore_deleted_deps boolean, wait jsonb, start jsonb, metadata jsonb,
            description text, dependents_wait boolean, wait_keys jsonb, ignore_skipped_deps boolean, condition text, deferred jsonb,
            keep_hold boolean, wait_started_at timestamptz)
      WHERE t.workflow_id = $1 AND t.name = x.name`,
    [workflowId, JSON.stringify(rows)],
  );
}

/** What a wait learnt, for tasks whose wait starts over: its timers and its registrations on other workflows. */
export async function forgetWaitState(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  await q.query(`DELETE FROM ${s}.timers WHERE workflow_id = $1 AND task = ANY($2::text[])`, [workflowId, names]);
  await q.query(`DELETE FROM ${s}.workflow_waiters WHERE workflow_id = $1 AND task = ANY($2::text[])`, [workflowId, names]);
}

/**
 * The workflow is on the target version: its hash, output template, inputs (with the target's defaults),
 * timeout (the current attempt's deadline follows it) and task counts; the move is recorded. Returns the new
 * deadline, if any.
 */
export async function setWorkflowVersion(
  q: Queryable,
  s: string,
  w: {
    id: string;
    from: string;
    to: string;
    output: unknown;
    inputs: unknown;
    timeoutMs: number | null;
    added: number;
    removed: number;
    open: boolean;
    at: Date;
  },
): Promise<Date | null> {
  const { rows } = await q.query<{ deadline_at: Date | null }>(
    `UPDATE ${s}.workflows SET definition_hash = $2, output_template = $3, inputs = $4, timeout_ms = $5::bigint,
            deadline_at = CASE WHEN state = 'running' THEN attempt_started_at + $5::bigint * interval '1 millisecond' ELSE deadline_at END,
            tasks_total = tasks_total + $6 - $7, tasks_open = tasks_open + CASE WHEN $8 THEN $6 - $7 ELSE 0 END
      WHERE id = $1 RETURNING deadline_at`,
    [w.id, w.to, w.output === null ? null : JSON.stringify(w.output), JSON.stringify(w.inputs), w.timeoutMs, w.added, w.removed, w.open],
  );
  await q.query(`INSERT INTO ${s}.workflow_upgrades (workflow_id, from_hash, to_hash, at) VALUES ($1, $2, $3, $4)`, [w.id, w.from, w.to, w.at]);
  return rows[0]?.deadline_at ?? null;
}

/** A workflow's moves between versions, oldest first. */
export async function upgradeHistory(q: Queryable, s: string, workflowId: string): Promise<UpgradeRecord[]> {
  const { rows } = await q.query<UpgradeRecord>(
    `SELECT from_hash AS "from", to_hash AS "to", at FROM ${s}.workflow_upgrades WHERE workflow_id = $1 ORDER BY id`,
    [workflowId],
  );
  return rows;
}

/** Running workflows of a name on another version than `to` (only `from`, only `ids`, when given), in id order after `after`. */
export async function upgradeCandidates(
  q: Queryable,
  s: string,
  p: { name: string; to: string; from?: string; ids?: readonly string[]; after: string; limit: number },
): Promise<{ id: string; hash: string }[]> {
  const { rows } = await q.query<{ id: string; hash: string }>(
    `SELECT id, definition_hash AS hash FROM ${s}.workflows
      WHERE name = $1 AND state = 'running' AND definition_hash <> $2 AND ($3::text IS NULL OR definition_hash = $3)
        AND ($4::text[] IS NULL OR id = ANY($4::text[])) AND id > $5
      ORDER BY id LIMIT $6`,
    [p.name, p.to, p.from ?? null, p.ids ?? null, p.after, p.limit],
  );
  return rows;
}

/** The version a workflow runs, and the current version of its name (null when none is registered). */
export async function versionAndCurrent(q: Queryable, s: string, workflowId: string): Promise<{ version: string; current: string | null }> {
  const { rows } = await q.query<{ version: string; current: string | null }>(
    `SELECT w.definition_hash AS version, c.hash AS current FROM ${s}.workflows w LEFT JOIN ${s}.definition_current c ON c.name = w.name WHERE w.id = $1`,
    [workflowId],
  );
  return rows[0];
}
