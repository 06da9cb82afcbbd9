import type { Queryable } from '../db/types.js';
import { markAwaitedSql } from './insert.js';
import { TASK_INSERT, type TaskRow } from './task-columns.js';

/** Items lo .. hi-1 of `template`, alike but for their args (`args`, from lo on); `first` is item lo's row. */
export interface RangeRow {
  ord: number;
  template: string;
  lo: number;
  hi: number;
  args: unknown[];
  first: TaskRow;
}

/** A new workflow's rows in their order: each a task row or a range of for_each siblings (engine/range-split.ts). */
export type Entry = { row: TaskRow; range?: undefined } | { range: RangeRow; row?: undefined };

/**
 * Inserts a new workflow's task rows and ranges in one statement, with ids in their order (what loads and status
 * list tasks by): each entry takes its ids in turn, a range a block of one per item (take_task_ids()).
 */
export async function insertTaskEntries(
  q: Queryable,
  s: string,
  workflowId: string,
  entries: readonly Entry[],
  now: Date,
  options: { markAwaited?: boolean } = {},
): Promise<void> {
  const rows = entries.flatMap((e) => (e.row ? [e.row] : []));
  const ranges = entries.flatMap((e) => (e.range ? [{ ...e.range.first, hi: e.range.hi, items: e.range.args }] : []));
  await q.query(
    `WITH ${options.markAwaited ? `marked AS (${markAwaitedSql(s)} RETURNING id), ` : ''}ids AS MATERIALIZED (
       -- unnest yields the entries in their order, and each takes its ids in turn
       SELECT e.ord, ${s}.take_task_ids(e.n) AS id FROM unnest($4::int[], $5::int[]) AS e(ord, n)
     ), task_rows AS (
       INSERT INTO ${s}.tasks (id, ${TASK_INSERT.columns})
       SELECT i.id, ${TASK_INSERT.values('$1', '$2')} FROM jsonb_to_recordset($3::jsonb) AS x(${TASK_INSERT.fields}) JOIN ids i ON i.ord = x.ord
        ORDER BY x.ord
     )
     INSERT INTO ${s}.task_ranges (workflow_id, template, lo, hi, base, first_id, kind, queue, priority, state, max_attempts, args, deps, dependents,
                                   deps_left, scheduled_at, timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps,
                                   ignore_skipped_deps, metadata, description, created_at)
     SELECT $1, x.template, x.idx, x.hi, x.idx, i.id, x.kind, x.queue, x.priority, x.state, x.max_attempts, x.items, '{}', '{}', 0, x.scheduled_at,
            x.timeout_ms, x.retry, x.ignore_cancelled_deps, x.ignore_discarded_deps, x.ignore_deleted_deps, coalesce(x.ignore_skipped_deps, false),
            coalesce(x.metadata, '{}'::jsonb), x.description, $2
       FROM jsonb_to_recordset($6::jsonb) AS x(${TASK_INSERT.fields}, hi int, items jsonb) JOIN ids i ON i.ord = x.ord`,
    [
      workflowId,
      now,
      JSON.stringify(rows),
      entries.map((e) => (e.row ? e.row.ord : e.range.ord)),
      entries.map((e) => (e.row ? 1 : e.range.hi - e.range.lo)),
      JSON.stringify(ranges),
    ],
  );
}
