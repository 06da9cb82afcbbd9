import type { Queryable } from '../db/types.js';
import { TASK_INSERT, type TaskRow } from './task-columns.js';
import { awaitLockKey } from './waits.js';

export type { TaskRow };

/** The statements that insert a workflow and its tasks (insert.ts makes the rows). */

export interface InsertExtras {
  parentId?: string | null;
  group?: string | null;
  /** The workflow attempt's span as a stored traceparent (OpenTelemetry), when one records. */
  traceContext?: string | null;
  /** The schedule whose tick started it. */
  schedule?: string | null;
}

/** A workflow's row, under the advisory lock of its id, which orders this insert with a wait registering on it. */
export async function insertWorkflow(
  q: Queryable,
  s: string,
  w: { id: string; name: string; hash: string; inputs: unknown; output: unknown; tasks: number; created: Date; timeoutMs: number | null },
  extras: InsertExtras,
): Promise<void> {
  await q.query(
    `WITH l AS (SELECT pg_advisory_xact_lock(${awaitLockKey('$1::text')}))
     INSERT INTO ${s}.workflows (id, name, definition_hash, inputs, output_template, tasks_total,
       tasks_open, parent_id, group_name, created_at, attempt_started_at,
                                 timeout_ms, deadline_at, trace_context, schedule)
     SELECT $1, $2, $3, $4, $5, $6, $6, $7, $8, $9::timestamptz, $9::timestamptz, $10::bigint,
            $9::timestamptz + $10::bigint * interval '1 millisecond', $11, $12 FROM l`,
    [
      w.id,
      w.name,
      w.hash,
      JSON.stringify(w.inputs),
      w.output === null ? null : JSON.stringify(w.output),
      w.tasks,
      extras.parentId ?? null,
      extras.group ?? null,
      w.created,
      w.timeoutMs,
      extras.traceContext ?? null,
      extras.schedule ?? null,
    ],
  );
}

/**
 * Marks a new workflow as awaited when some wait registered on its id before it existed; in a statement after
 * insertWorkflow's, so its snapshot shows those registrations.
 */
export const markAwaitedSql = (s: string) =>
  `UPDATE ${s}.workflows SET has_waiters = true WHERE id = $1::text AND EXISTS (SELECT 1 FROM ${s}.workflow_waiters WHERE awaited_id = $1::text)`;

export async function markAwaited(q: Queryable, s: string, workflowId: string): Promise<void> {
  await q.query(markAwaitedSql(s), [workflowId]);
}

/**
 * Inserts task rows of one workflow in their order (the order loads and status list them in); `markAwaited`
 * marks, in the same statement, a new workflow that others already wait on (by business key).
 */
export async function insertTaskRows(
  q: Queryable,
  ctx: { s: string },
  workflowId: string,
  rows: readonly TaskRow[],
  now: Date,
  options: { markAwaited?: boolean } = {},
): Promise<void> {
  const s = ctx.s;
  await q.query(
    `${options.markAwaited ? `WITH marked AS (${markAwaitedSql(s)} RETURNING id)` : ''}
     INSERT INTO ${s}.tasks (${TASK_INSERT.columns})
     SELECT ${TASK_INSERT.values('$1', '$2')} FROM jsonb_to_recordset($3::jsonb) AS x(${TASK_INSERT.fields})
      ORDER BY x.ord`,
    [workflowId, now, JSON.stringify(rows)],
  );
}

/** What every workflow of a batch start shares: one definition version, one creation time. */
export interface BatchHead {
  name: string;
  hash: string;
  output: unknown;
  created: Date;
  timeoutMs: number | null;
}

/** One workflow of a batch start: its row, and its tasks' rows. */
export interface BatchWorkflow {
  id: string;
  /** A caller-chosen id (a business key): locked as a single start locks it, and reported when it exists already. */
  keyed: boolean;
  inputs: unknown;
  traceContext: string | null;
  /** Its task rows; the one array for every workflow when the definition's plans do not depend on inputs (stamped). */
  tasks: readonly TaskRow[];
}

/**
 * Inserts a batch of workflows and all their tasks in one statement. Business keys are locked first (in id
 * order, with the locks a single start and a wait registration take, so either waits for the other), and a
 * key that a workflow has already is skipped (ON CONFLICT waits for a start in flight to commit). Returns the
 * keys found taken (the rest is inserted); the caller compares those with what is stored.
 *
 * The workflows go as flat arrays (an id, an inputs text, a trace context each). When every workflow has the
 * same task rows (one array: the definition's plans do not depend on inputs), those rows are sent once and
 * stamped for each inserted workflow in SQL; otherwise each task row names its workflow.
 */
export async function insertWorkflowBatch(
  q: Queryable,
  schema: string,
  s: string,
  head: BatchHead,
  batch: readonly BatchWorkflow[],
  extras: InsertExtras,
): Promise<ReadonlySet<string>> {
  const stamped = batch.every((w) => w.tasks === batch[0].tasks);
  const ids: string[] = new Array(batch.length);
  const keyed: boolean[] = new Array(batch.length);
  const inputs: string[] = new Array(batch.length);
  const traces: (string | null)[] = new Array(batch.length);
  const counts: number[] = new Array(batch.length);
  for (let i = 0; i < batch.length; i++) {
    const w = batch[i];
    ids[i] = w.id;
    keyed[i] = w.keyed;
    inputs[i] = JSON.stringify(w.inputs);
    traces[i] = w.traceContext;
    counts[i] = w.tasks.length;
  }
  // a template as an array of rows, so the planner knows its size (a recordset's estimate is 100 rows, which times
  // the batch's workflows priced the insert past the threshold where Postgres compiles it: 0.7 s of JIT a batch)
  const tasks = stamped
    ? (batch[0]?.tasks ?? []).map((t) => JSON.stringify(t))
    : JSON.stringify(batch.flatMap((w) => w.tasks.map((t) => ({ ...t, wid: w.id }))));
  const { rows } = await q.query<{ taken: string[] }>(batchInsertSql(s, stamped ? (batch[0]?.tasks.length ?? 0) : null), [
    ids,
    keyed,
    inputs,
    traces,
    counts,
    tasks,
    schema,
    head.name,
    head.hash,
    head.output === null ? null : JSON.stringify(head.output),
    extras.parentId ?? null,
    extras.group ?? null,
    head.created,
    head.timeoutMs,
    extras.schedule ?? null,
  ]);
  return new Set(rows[0].taken);
}

/**
 * The batch insert: $1-$5 the workflows' flat arrays (id, keyed, inputs, trace context, task count), $6 the task
 * rows (stamped: the template's, as jsonb[]; else a JSON list naming each row's workflow), $7 the schema, $8-$15
 * what the workflows share; `stamped` the template's task count (null: each workflow has its own rows). Returns the
 * business keys found taken.
 */
function batchInsertSql(s: string, stamped: number | null): string {
  return `WITH ${
    stamped !== null
      ? `template AS MATERIALIZED (
       SELECT x.ord, ${TASK_INSERT.named} FROM unnest($6::jsonb[]) AS e(row) CROSS JOIN LATERAL jsonb_to_record(e.row) AS x(${TASK_INSERT.fields})
     ), `
      : ''
  }batch AS MATERIALIZED (
       SELECT * FROM unnest($1::text[], $2::boolean[], $3::text[], $4::text[], $5::int[]) AS x(id, keyed, inputs, trace, tasks)
     ), locked AS MATERIALIZED (
       SELECT count(pg_advisory_xact_lock(hashtext('braid:start:' || $7::text || ':' || k.id))) +
              count(pg_advisory_xact_lock(${awaitLockKey('k.id')})) AS n
         FROM (SELECT DISTINCT id FROM batch WHERE keyed ORDER BY id) k
     ), keyed AS (
       ${insertWorkflowsSql(s, 'x.keyed AND (SELECT n FROM locked) >= 0')}
       ON CONFLICT (id) DO NOTHING
       RETURNING w.id
     ), fresh AS (
       -- ids braid made (ULIDs): no conflict to look for (a speculative insertion cost 5 µs a row)
       ${insertWorkflowsSql(s, 'NOT x.keyed')}
       RETURNING w.id
     ), inserted AS (
       SELECT id FROM keyed UNION ALL SELECT id FROM fresh
     ), tasks AS (
       INSERT INTO ${s}.tasks (${TASK_INSERT.columns})
       ${
         stamped !== null
           ? `SELECT i.id, $13::timestamptz, ${TASK_INSERT.stamped('r')}
         FROM inserted i CROSS JOIN template r
        -- a workflow's tasks in their order (a template of one task needs no sort)
        ${stamped > 1 ? 'ORDER BY i.id, r.ord' : ''}`
           : `SELECT ${TASK_INSERT.values('x.wid', '$13::timestamptz')}
         FROM jsonb_to_recordset($6::jsonb) AS x(wid text, ${TASK_INSERT.fields})
        WHERE x.wid IN (SELECT id FROM inserted)
        ORDER BY x.wid, x.ord`
       }
     )
     SELECT ARRAY(SELECT id FROM batch WHERE keyed EXCEPT SELECT id FROM keyed) AS taken`;
}

/** The batch's workflows (`batch x`) that `where` selects, inserted as `w`: the statement's $8-$15 are their shared values. */
function insertWorkflowsSql(s: string, where: string): string {
  return `INSERT INTO ${s}.workflows AS w (id, name, definition_hash, inputs, output_template, tasks_total, tasks_open, parent_id, group_name,
                                        created_at, attempt_started_at, timeout_ms, deadline_at, trace_context, schedule, has_waiters)
       SELECT x.id, $8, $9, x.inputs::jsonb, $10::jsonb, x.tasks, x.tasks, $11, $12, $13::timestamptz, $13::timestamptz, $14::bigint,
              $13::timestamptz + $14::bigint * interval '1 millisecond', x.trace, $15, false
         FROM batch x
        WHERE ${where}`;
}

/**
 * Marks inserted workflows with business keys as awaited where a wait registered on them; a statement after
 * the insert's, so its snapshot shows registrations that committed while the insert waited for its locks.
 */
export async function markAwaitedMany(q: Queryable, s: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.query(
    `UPDATE ${s}.workflows w SET has_waiters = true
      WHERE w.id = ANY($1::text[]) AND NOT w.has_waiters AND EXISTS (SELECT 1 FROM ${s}.workflow_waiters ww WHERE ww.awaited_id = w.id)`,
    [ids],
  );
}
