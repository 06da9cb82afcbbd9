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
     SELECT $1, $2, $3, $4, $5, $6, $6, $7, $8, $9::timestamptz, $9::timestamptz, $10::bigint, $9::timestamptz + $10::bigint * interval '1 millisecond', $11, $12 FROM l`,
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
