import type { Queryable } from '../db/types.js';
import type { BulkOperation, WorkflowSearch } from '../wire/index.js';
import { searchConditions } from './workflows.js';

/** A workflow as a bulk operation's `--where` reads it. */
export interface SelectedRow {
  id: string;
  name: string;
  state: string;
  version: string;
  inputs: unknown;
  error: string | null;
  created_at: Date;
}

/**
 * A page of the workflows a search selects, by id (after `afterId`): what `--where` is evaluated on, with the
 * workflow's error (its output's, else the last error of the last task that failed).
 */
export async function selectPage(q: Queryable, s: string, f: Omit<WorkflowSearch, 'cursor' | 'limit'>, afterId: string, limit: number): Promise<SelectedRow[]> {
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = [...searchConditions(s, f, p), `w.id > ${p(afterId)}`];
  const { rows } = await q.query<SelectedRow>(
    `SELECT w.id, w.name, w.state, w.definition_hash AS version, w.inputs, w.created_at,
            coalesce(w.output_error, (SELECT t.errors -> -1 ->> 'message' FROM ${s}.task_view t
                                        WHERE t.workflow_id = w.id AND t.state IN ('discarded', 'cancelled') AND t.errors <> '[]'::jsonb
                                        ORDER BY t.finalized_at DESC NULLS LAST LIMIT 1)) AS error
       FROM ${s}.workflows w WHERE ${where.join(' AND ')} ORDER BY w.id LIMIT ${p(limit)}`,
    params,
  );
  return rows;
}

const COLUMNS = `name, action, options, filter, actor, reason, rate_per_s, state, total, done, failed, created_at, finished_at, runner, runner_at`;

/** Records an operation and its frozen selection (one item per workflow, in order; none: done at once). False when the name is taken. */
export async function insertOperation(
  q: Queryable,
  s: string,
  o: Pick<BulkOperation, 'name' | 'action' | 'options' | 'filter' | 'actor' | 'reason' | 'rate_per_s'> & { at: Date; runner: string },
  ids: readonly string[],
): Promise<boolean> {
  const { rows } = await q.query(
    `INSERT INTO ${s}.bulk_operations (name, action, options, filter, actor, reason, rate_per_s, state, total, created_at, finished_at, runner, runner_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $8::int = 0 THEN 'completed' ELSE 'running' END, $8::int, $9::timestamptz,
             CASE WHEN $8::int = 0 THEN $9::timestamptz END, $10, $9::timestamptz)
     ON CONFLICT (name) DO NOTHING RETURNING name`,
    [o.name, o.action, JSON.stringify(o.options), JSON.stringify(o.filter), o.actor, o.reason, o.rate_per_s, ids.length, o.at, o.runner],
  );
  if (rows.length === 0) return false;
  await q.query(`INSERT INTO ${s}.bulk_items (operation, seq, workflow_id) SELECT $1, i.n::int, i.id FROM unnest($2::text[]) WITH ORDINALITY AS i(id, n)`, [
    o.name,
    ids,
  ]);
  return true;
}

export async function loadOperation(q: Queryable, s: string, name: string): Promise<BulkOperation | undefined> {
  const { rows } = await q.query<BulkOperation>(`SELECT ${COLUMNS} FROM ${s}.bulk_operations WHERE name = $1`, [name]);
  return rows[0];
}

/** The latest operations, newest first. */
export async function listOperations(q: Queryable, s: string, limit = 100): Promise<BulkOperation[]> {
  const { rows } = await q.query<BulkOperation>(`SELECT ${COLUMNS} FROM ${s}.bulk_operations ORDER BY created_at DESC, name LIMIT $1`, [limit]);
  return rows;
}

/** The first items of an operation (its first ids, for a preview). */
export async function operationIds(q: Queryable, s: string, name: string, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ workflow_id: string }>(`SELECT workflow_id FROM ${s}.bulk_items WHERE operation = $1 ORDER BY seq LIMIT $2`, [name, limit]);
  return rows.map((r) => r.workflow_id);
}

/**
 * The next item to act on, locked for the caller's transaction (skipped when another runner holds it): each
 * item is acted on and its outcome recorded in one transaction.
 */
export async function claimItem(q: Queryable, s: string, name: string): Promise<{ seq: number; workflow_id: string } | undefined> {
  const { rows } = await q.query<{ seq: number; workflow_id: string }>(
    `SELECT i.seq, i.workflow_id FROM ${s}.bulk_items i JOIN ${s}.bulk_operations o ON o.name = i.operation AND o.state = 'running'
      WHERE i.operation = $1 AND i.outcome IS NULL ORDER BY i.seq LIMIT 1 FOR UPDATE OF i SKIP LOCKED`,
    [name],
  );
  return rows[0];
}

/** Records an item's outcome and counts it on its operation (which completes with its last item); the runner's mark renewed. */
export async function recordItem(
  q: Queryable,
  s: string,
  i: { name: string; seq: number; outcome: 'done' | 'failed'; error?: string; at: Date; runner: string },
): Promise<void> {
  await q.query(
    `WITH item AS (UPDATE ${s}.bulk_items SET outcome = $3, error = $4 WHERE operation = $1 AND seq = $2 AND outcome IS NULL RETURNING outcome)
     UPDATE ${s}.bulk_operations o
        SET done = o.done + (SELECT count(*) FROM item WHERE outcome = 'done'), failed = o.failed + (SELECT count(*) FROM item WHERE outcome = 'failed'),
            runner = $6, runner_at = $5,
            state = CASE WHEN o.done + o.failed + (SELECT count(*) FROM item) >= o.total THEN 'completed' ELSE o.state END,
            finished_at = CASE WHEN o.done + o.failed + (SELECT count(*) FROM item) >= o.total THEN $5 ELSE o.finished_at END
      WHERE o.name = $1 AND o.state = 'running'`,
    [i.name, i.seq, i.outcome, i.error ?? null, i.at, i.runner],
  );
}

/**
 * Takes an operation to run (a new runner, or one whose runner has been silent since `staleBefore`): the
 * operation as it stands, or undefined when it is not running or another runs it.
 */
export async function takeOperation(q: Queryable, s: string, name: string, runner: string, at: Date, staleBefore: Date): Promise<BulkOperation | undefined> {
  const { rows } = await q.query<BulkOperation>(
    `UPDATE ${s}.bulk_operations SET runner = $2, runner_at = $3
      WHERE name = $1 AND state = 'running' AND (runner IS NULL OR runner = $2 OR runner_at < $4) RETURNING ${COLUMNS}`,
    [name, runner, at, staleBefore],
  );
  return rows[0];
}

/** Lets go of a running operation this runner holds (it stops before its end): another may continue it at once. */
export async function releaseOperation(q: Queryable, s: string, name: string, runner: string): Promise<void> {
  await q.query(`UPDATE ${s}.bulk_operations SET runner = NULL WHERE name = $1 AND runner = $2 AND state = 'running'`, [name, runner]);
}

/** Running operations no live runner acts on (none, or silent since `staleBefore`): what the leader continues. */
export async function orphanedOperations(q: Queryable, s: string, staleBefore: Date, limit = 10): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(
    `SELECT name FROM ${s}.bulk_operations WHERE state = 'running' AND (runner IS NULL OR runner_at < $1) ORDER BY created_at LIMIT $2`,
    [staleBefore, limit],
  );
  return rows.map((r) => r.name);
}

/** Stops an operation: what it has not acted on yet is skipped. */
export async function cancelOperation(q: Queryable, s: string, name: string, at: Date): Promise<BulkOperation | undefined> {
  await q.query(`UPDATE ${s}.bulk_items SET outcome = 'skipped' WHERE operation = $1 AND outcome IS NULL`, [name]);
  const { rows } = await q.query<BulkOperation>(
    `UPDATE ${s}.bulk_operations SET state = CASE WHEN state = 'running' THEN 'cancelled' ELSE state END, finished_at = coalesce(finished_at, $2), runner = NULL
      WHERE name = $1 RETURNING ${COLUMNS}`,
    [name, at],
  );
  return rows[0];
}
