import type { Queryable } from '../db/types.js';

/** The JSON columns that may hold sealed values, as text (not parsed: a rotation reseals envelopes as they are). */
export interface SealedRow {
  workflow_id: string;
  /** null for the workflow's own row. */
  task: string | null;
  inputs: string | null;
  output: string | null;
  args: string | null;
  metadata: string | null;
  deferred: string | null;
}

/**
 * The next workflows after `after` (by id) with a sealed value anywhere in their rows: their ids, at most
 * `limit`. A scan by id: a rotation's rerun starts again from the first, and finds only what is left.
 */
export async function workflowsWithSealed(q: Queryable, s: string, after: string, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT w.id FROM ${s}.workflows w
      WHERE w.id > $1 AND (strpos(w.inputs::text, 'braid:enc:v1:') > 0 OR strpos(coalesce(w.output::text, ''), 'braid:enc:v1:') > 0
        OR EXISTS (SELECT 1 FROM ${s}.tasks t WHERE t.workflow_id = w.id
          AND strpos(t.args::text || coalesce(t.output::text, '') || t.metadata::text || coalesce(t.deferred::text, ''), 'braid:enc:v1:') > 0))
      ORDER BY w.id LIMIT $2`,
    [after, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * One workflow's rows that hold a sealed value, as text, each locked (FOR UPDATE): a completion or a render that
 * comes meanwhile waits for the rotation's commit, and then writes over it, never under it.
 */
export async function sealedRows(q: Queryable, s: string, workflowId: string): Promise<SealedRow[]> {
  const own = await q.query<SealedRow>(
    `SELECT id AS workflow_id, NULL AS task, inputs::text AS inputs, output::text AS output, NULL AS args, NULL AS metadata, NULL AS deferred
       FROM ${s}.workflows WHERE id = $1 FOR UPDATE`,
    [workflowId],
  );
  const tasks = await q.query<SealedRow>(
    `SELECT workflow_id, name AS task, NULL AS inputs, output::text AS output, args::text AS args, metadata::text AS metadata, deferred::text AS deferred
       FROM ${s}.tasks
      WHERE workflow_id = $1 AND strpos(args::text || coalesce(output::text, '') || metadata::text || coalesce(deferred::text, ''), 'braid:enc:v1:') > 0
      ORDER BY name FOR UPDATE`,
    [workflowId],
  );
  return [...own.rows, ...tasks.rows];
}

/** Writes a row's resealed columns back (the text given is JSON). */
export async function writeResealed(q: Queryable, s: string, row: SealedRow): Promise<void> {
  if (row.task === null) {
    await q.query(`UPDATE ${s}.workflows SET inputs = $2::jsonb, output = $3::jsonb WHERE id = $1`, [row.workflow_id, row.inputs, row.output]);
    return;
  }
  await q.query(`UPDATE ${s}.tasks SET args = $3::jsonb, output = $4::jsonb, metadata = $5::jsonb, deferred = $6::jsonb WHERE workflow_id = $1 AND name = $2`, [
    row.workflow_id,
    row.task,
    row.args,
    row.output,
    row.metadata,
    row.deferred,
  ]);
}
