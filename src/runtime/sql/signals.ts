import type { PlanWait } from '../../compiler/plan.js';
import type { Queryable } from '../db/types.js';
import type { SignalRow } from '../waits/decide.js';
import type { WaitEvidence } from '../waits/records.js';
import type { SignalPage } from '../wire/index.js';
import { type WaitingTask, waitingTasksOfJson, waitingTasksSql } from './waits.js';

export type { SignalPage };

/** A signal row's fields, as every read returns them (its bigint id as text). */
const FIELDS = ['id', 'attempt', 'key', 'payload', 'source', 'idempotency_key', 'created_at'] as const satisfies readonly (keyof SignalRow)[];
/** A field's SQL, of row `g` (unqualified without it). */
const fieldSql = (g: string, f: (typeof FIELDS)[number]) => `${g ? `${g}.` : ''}${f}${f === 'id' ? '::text' : ''}`;
const COLUMNS = FIELDS.map((f) => (f === 'id' ? `${fieldSql('', f)} AS id` : f)).join(', ');

/** Signal row `g` as a JSON object of the same fields (a claim carries a resolved wait's signals so: fetch.ts). */
export function signalJsonSql(g: string): string {
  return `json_build_object(${FIELDS.map((f) => `'${f}', ${fieldSql(g, f)}`).join(', ')})`;
}

/** Signal rows read as JSON objects (signalJsonSql's): their times as dates, as a read of the rows gives them. */
export function signalsOfJson(rows: (Omit<SignalRow, 'created_at'> & { created_at: string })[]): SignalRow[] {
  return rows.map((r) => ({ ...r, created_at: new Date(r.created_at) }));
}

/**
 * Stores a signal; also returns the last id of its key before it, and the workflow's tasks waiting on its key
 * (read in the same statement: the emit's next step judges them, one round trip fewer). The caller holds the
 * workflow's lock, so this statement's snapshot (taken after the lock) shows every earlier row of the workflow.
 */
export async function insertSignal(
  q: Queryable,
  s: string,
  p: {
    workflowId: string;
    key: string;
    payload: unknown;
    source: unknown;
    idempotencyKey: string | null;
    attempt: number;
    now: Date;
    anyKey: boolean;
    traceContext?: string | null;
  },
): Promise<{ row: SignalRow; previousId: string; waiting: WaitingTask[] } | undefined> {
  // only a key some task of the workflow waits on (unless anyKey): checked in the same statement, after the lock
  const { rows } = await q.query<SignalRow & { previous_id: string | null; waiting: Parameters<typeof waitingTasksOfJson>[0] }>(
    `WITH previous AS (SELECT max(id)::text AS id FROM ${s}.signals WHERE workflow_id = $1 AND key = $3)
     INSERT INTO ${s}.signals (workflow_id, attempt, key, payload, source, idempotency_key, created_at, trace_context)
     SELECT $1::text, $2::int, $3::text, $4::jsonb, $5::jsonb, $6::text, $7::timestamptz, $9::text
      WHERE $8::boolean OR EXISTS (SELECT 1 FROM ${s}.tasks WHERE workflow_id = $1::text AND $3::text = ANY(wait_keys))
     RETURNING ${COLUMNS}, (SELECT id FROM previous) AS previous_id,
               (SELECT json_agg(w) FROM (${waitingTasksSql(s, '$1::text', 'NULL', '$3::text')}) w) AS waiting`,
    [
      p.workflowId,
      p.attempt,
      p.key,
      JSON.stringify(p.payload),
      p.source === undefined ? null : JSON.stringify(p.source),
      p.idempotencyKey,
      p.now,
      p.anyKey,
      p.traceContext ?? null,
    ],
    { prepare: true },
  );
  if (rows.length === 0) return undefined;
  const { previous_id, waiting, ...row } = rows[0];
  return { row, previousId: previous_id ?? '0', waiting: waitingTasksOfJson(waiting) };
}

/** The row an idempotency key already names, and whether its payload equals this one (as JSON values). */
export async function signalByIdempotencyKey(
  q: Queryable,
  s: string,
  p: { workflowId: string; key: string; idempotencyKey: string; payload: unknown },
): Promise<(SignalRow & { same_payload: boolean }) | undefined> {
  const { rows } = await q.query<SignalRow & { same_payload: boolean }>(
    `SELECT ${COLUMNS}, payload = $4::jsonb AS same_payload FROM ${s}.signals WHERE workflow_id = $1 AND key = $2 AND idempotency_key = $3`,
    [p.workflowId, p.key, p.idempotencyKey, JSON.stringify(p.payload)],
  );
  return rows[0];
}

/** Signals of one workflow in id order, paged by cursor, filtered by attempt, keys and an upper id bound. */
export async function listSignals(
  q: Queryable,
  s: string,
  p: { workflowId: string; attempt?: number; keys?: readonly string[]; cursorId?: string; upToId?: string | null; limit: number; newestFirst?: boolean },
): Promise<SignalPage> {
  const order = p.newestFirst ? 'DESC' : 'ASC';
  const cmp = p.newestFirst ? '<' : '>';
  const { rows } = await q.query<SignalRow>(
    `SELECT ${COLUMNS} FROM ${s}.signals
      WHERE workflow_id = $1 AND ($2::int IS NULL OR attempt = $2) AND ($3::text[] IS NULL OR key = ANY($3::text[]))
        AND ($4::bigint IS NULL OR id ${cmp} $4::bigint) AND ($5::bigint IS NULL OR id <= $5::bigint)
      ORDER BY signals.id ${order} LIMIT $6`,
    [p.workflowId, p.attempt ?? null, p.keys ?? null, p.cursorId ?? null, p.upToId ?? null, p.limit + 1],
  );
  const has_more = rows.length > p.limit;
  const signals = rows.slice(0, p.limit);
  return { signals, next_cursor_id: has_more ? signals[signals.length - 1].id : null, has_more };
}

/** Every key the workflow's waits read, sorted. */
export async function waitedKeys(q: Queryable, s: string, workflowId: string): Promise<string[]> {
  const { rows } = await q.query<{ key: string }>(
    `SELECT DISTINCT k.key FROM ${s}.tasks t CROSS JOIN LATERAL unnest(t.wait_keys) AS k(key) WHERE t.workflow_id = $1 ORDER BY 1`,
    [workflowId],
  );
  return rows.map((r) => r.key);
}

/** What bounds the signals a task's wait may see: its wait, its evidence, and the workflow's attempt. */
export async function signalScope(
  q: Queryable,
  s: string,
  workflowId: string,
  task: string,
): Promise<{ wait: PlanWait | null; wait_evidence: WaitEvidence | null; attempt: number } | undefined> {
  const { rows } = await q.query<{ wait: PlanWait | null; wait_evidence: WaitEvidence | null; attempt: number }>(
    `SELECT t.wait, t.wait_evidence, w.attempt FROM ${s}.task_view t JOIN ${s}.workflows w ON w.id = t.workflow_id WHERE t.workflow_id = $1 AND t.name = $2`,
    [workflowId, task],
  );
  return rows[0];
}

/** Some of one workflow's signals by id, in id order (the rows a resolved wait's evidence names). */
export async function signalsByIds(q: Queryable, s: string, workflowId: string, ids: readonly string[]): Promise<SignalRow[]> {
  const { rows } = await q.query<SignalRow>(`SELECT ${COLUMNS} FROM ${s}.signals WHERE workflow_id = $1 AND id = ANY($2::bigint[]) ORDER BY signals.id`, [
    workflowId,
    ids,
  ]);
  return rows;
}

/** The stored traceparents of the spans that sent some of one workflow's signals (a resolved wait's links). */
export async function signalTraceContexts(q: Queryable, s: string, workflowId: string, ids: readonly string[]): Promise<Map<string, string | null>> {
  const { rows } = await q.query<{ id: string; trace_context: string | null }>(
    `SELECT id::text AS id, trace_context FROM ${s}.signals WHERE workflow_id = $1 AND id = ANY($2::bigint[])`,
    [workflowId, ids],
  );
  return new Map(rows.map((r) => [r.id, r.trace_context]));
}
