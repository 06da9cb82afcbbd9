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
const markAwaitedSql = (s: string) =>
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

/** One workflow of a batch start: its row, and its tasks' rows. */
export interface BatchWorkflow {
  id: string;
  /** A caller-chosen id (a business key): locked as a single start locks it, and reported when it exists already. */
  keyed: boolean;
  name: string;
  hash: string;
  inputs: unknown;
  output: unknown;
  created: Date;
  timeoutMs: number | null;
  traceContext: string | null;
  tasks: readonly TaskRow[];
}

/**
 * Inserts a batch of workflows and all their tasks in one statement. Business keys are locked first (in id
 * order, with the locks a single start and a wait registration take, so either waits for the other), and a
 * key that a workflow has already is skipped (ON CONFLICT waits for a start in flight to commit). Returns the
 * ids inserted; the caller compares the others with what is stored.
 */
export async function insertWorkflowBatch(
  q: Queryable,
  schema: string,
  s: string,
  batch: readonly BatchWorkflow[],
  extras: InsertExtras,
): Promise<Set<string>> {
  const workflows = batch.map((w) => ({
    id: w.id,
    keyed: w.keyed,
    name: w.name,
    hash: w.hash,
    inputs: w.inputs,
    output: w.output,
    tasks: w.tasks.length,
    created: w.created.toISOString(),
    timeout_ms: w.timeoutMs,
    trace: w.traceContext,
  }));
  const tasks = batch.flatMap((w) => w.tasks.map((t) => ({ ...t, wid: w.id, wcreated: w.created.toISOString() })));
  const { rows } = await q.query<{ ids: string[] | null }>(
    `WITH keys AS MATERIALIZED (
       SELECT DISTINCT x.id FROM jsonb_to_recordset($1::jsonb) AS x(id text, keyed boolean) WHERE x.keyed
     ), locked AS MATERIALIZED (
       SELECT count(pg_advisory_xact_lock(hashtext('braid:start:' || $3::text || ':' || k.id))) +
              count(pg_advisory_xact_lock(${awaitLockKey('k.id')})) AS n
         FROM (SELECT id FROM keys ORDER BY id) k
     ), inserted AS (
       INSERT INTO ${s}.workflows AS w (id, name, definition_hash, inputs, output_template, tasks_total, tasks_open, parent_id, group_name,
                                        created_at, attempt_started_at, timeout_ms, deadline_at, trace_context, schedule, has_waiters)
       SELECT x.id, x.name, x.hash, x.inputs, x.output, x.tasks, x.tasks, $4, $5, x.created, x.created, x.timeout_ms,
              x.created + x.timeout_ms * interval '1 millisecond', x.trace, $6, false
         FROM jsonb_to_recordset($1::jsonb) AS x(id text, keyed boolean, name text, hash text, inputs jsonb, output jsonb, tasks int,
                                                 created timestamptz, timeout_ms bigint, trace text)
        WHERE (SELECT n FROM locked) >= 0
       ON CONFLICT (id) DO NOTHING
       RETURNING w.id
     ), tasks AS (
       INSERT INTO ${s}.tasks (${TASK_INSERT.columns})
       SELECT ${TASK_INSERT.values('x.wid', 'x.wcreated')}
         FROM jsonb_to_recordset($2::jsonb) AS x(wid text, wcreated timestamptz, ${TASK_INSERT.fields})
        WHERE x.wid IN (SELECT id FROM inserted)
        ORDER BY x.wid, x.ord
     )
     SELECT array_agg(id) AS ids FROM inserted`,
    [JSON.stringify(workflows), JSON.stringify(tasks), schema, extras.parentId ?? null, extras.group ?? null, extras.schedule ?? null],
  );
  return new Set(rows[0]?.ids ?? []);
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
