import type { Queryable } from '../db/types.js';

/** Where sealed values may be stored: each table's JSON columns, and how one of a workflow's rows is named. */
const TABLES = {
  workflows: { columns: ['inputs', 'output'], key: 'id', owner: 'id' },
  tasks: { columns: ['args', 'output', 'metadata', 'deferred'], key: 'name', owner: 'workflow_id' },
  signals: { columns: ['payload'], key: 'id', owner: 'workflow_id' },
  effects: { columns: ['payload'], key: 'id', owner: 'workflow_id' },
} as const;

export type SealedTable = keyof typeof TABLES;

/** One row's JSON columns that may hold sealed values, as text (not parsed: a rotation reseals envelopes as they are). */
export interface SealedRow {
  table: SealedTable;
  /** The row within its workflow: the workflow's id, a task's name, a signal's or effect's id. */
  key: string;
  columns: Record<string, string | null>;
}

const MARK = `'braid:enc:v1:'`;
/** A condition true when any of a table's JSON columns holds an envelope (alias `x`). */
const holds = (table: SealedTable): string => TABLES[table].columns.map((c) => `strpos(coalesce(x.${c}::text, ''), ${MARK}) > 0`).join(' OR ');

/**
 * The next workflows after `after` (by id) with a sealed value anywhere in their rows: their ids, at most
 * `limit`. A scan by id: a rotation's rerun starts again from the first, and finds only what is left.
 */
export async function workflowsWithSealed(q: Queryable, s: string, after: string, limit: number): Promise<string[]> {
  const others = (['tasks', 'signals', 'effects'] as const).map((t) => `EXISTS (SELECT 1 FROM ${s}.${t} x WHERE x.workflow_id = w.id AND (${holds(t)}))`);
  const { rows } = await q.query<{ id: string }>(
    `SELECT w.id FROM ${s}.workflows w WHERE w.id > $1 AND (${holds('workflows').replaceAll('x.', 'w.')} OR ${others.join(' OR ')}) ORDER BY w.id LIMIT $2`,
    [after, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * One workflow's rows that hold a sealed value, as text, each locked (FOR UPDATE): a completion or a render that
 * comes meanwhile waits for the rotation's commit, and then writes over it, never under it.
 */
export async function sealedRows(q: Queryable, s: string, workflowId: string): Promise<SealedRow[]> {
  const out: SealedRow[] = [];
  for (const [table, t] of Object.entries(TABLES) as [SealedTable, (typeof TABLES)[SealedTable]][]) {
    const { rows } = await q.query<Record<string, string | null> & { row_key: string }>(
      `SELECT ${t.key}::text AS row_key, ${t.columns.map((c) => `${c}::text AS ${c}`).join(', ')} FROM ${s}.${table} x
        WHERE x.${t.owner} = $1 AND (${holds(table)}) ORDER BY x.${t.key} FOR UPDATE`,
      [workflowId],
    );
    for (const { row_key, ...columns } of rows) out.push({ table, key: row_key, columns });
  }
  return out;
}

/**
 * Writes a row's resealed columns back (the text given is JSON). A task that names the keys it needs
 * (needs_keys) names those its resealed values were sealed with.
 */
export async function writeResealed(q: Queryable, s: string, workflowId: string, row: SealedRow): Promise<void> {
  const t = TABLES[row.table];
  const names = Object.keys(row.columns);
  const keyType = row.table === 'signals' || row.table === 'effects' ? 'bigint' : 'text';
  const sets = names.map((c, i) => `${c} = $${i + 3}::jsonb`);
  if (row.table === 'tasks') {
    const texts = names.map((_, i) => `coalesce($${i + 3}::text, '')`).join(` || ' ' || `);
    const kids = `ARRAY(SELECT DISTINCT m[1] FROM regexp_matches(${texts}, 'braid:enc:v1:([A-Za-z0-9_-]+):', 'g') m ORDER BY 1)`;
    sets.push(`needs_keys = CASE WHEN needs_keys IS NOT NULL THEN ${kids} END`);
  }
  await q.query(`UPDATE ${s}.${row.table} SET ${sets.join(', ')} WHERE ${t.owner} = $1 AND ${t.key} = $2::${keyType}`, [
    workflowId,
    row.key,
    ...names.map((c) => row.columns[c]),
  ]);
}

/** The next events after `after` (by seq) whose payload holds a sealed value, as text, locked. */
export async function sealedEvents(q: Queryable, s: string, after: string, limit: number): Promise<{ seq: string; payload: string }[]> {
  const { rows } = await q.query<{ seq: string; payload: string }>(
    `SELECT seq::text AS seq, payload::text AS payload FROM ${s}.events WHERE seq > $1::bigint AND strpos(payload::text, ${MARK}) > 0
      ORDER BY seq LIMIT $2 FOR UPDATE`,
    [after, limit],
  );
  return rows;
}

export async function writeResealedEvent(q: Queryable, s: string, seq: string, payload: string): Promise<void> {
  await q.query(`UPDATE ${s}.events SET payload = $2::jsonb WHERE seq = $1::bigint`, [seq, payload]);
}
