import { workflowPausedSql } from './pauses.js';

/**
 * The claim's part for ranges of for_each siblings (migration 046): the queue's available ranges in its order,
 * each item in its place among the rows the claim picked (a range's items share its priority and schedule, and
 * follow its ids), then each range the claim takes items from split: its front goes into running ranges of the
 * worker (a row per RUNNING_RANGE_MAX items), the rest stays available. Fragments of fetchSql (sql/fetch.ts), whose
 * parameters they read: $1 queue, $3 limit, $4 worker, $5 now.
 */

/**
 * CTEs `ranges` (the available ranges of the queue, locked, in its order: each range's workflow row held FOR KEY
 * SHARE, so that lock_workflows() waits for the claim, and a range whose workflow it holds is passed over),
 * `range_fronts` (the front items of those ranges, as many as could be claimed) and `chosen` (the rows picked by
 * `ahead` and `behind` and those items, the first $3 in the queue's order: what the claim takes).
 */
export function rangedPickSql(s: string): string {
  return `ranges AS MATERIALIZED (
       SELECT r.workflow_id, r.template, r.lo, r.hi, r.base, r.first_id, r.priority, r.scheduled_at
         FROM ${s}.task_ranges r JOIN ${s}.workflows w ON w.id = r.workflow_id
        WHERE r.state = 'available' AND r.queue = $1 AND r.kind = ANY((SELECT kinds FROM open)::text[]) AND (SELECT queue_open FROM open)
          AND NOT ${workflowPausedSql(s, 'r')}
        ORDER BY r.priority, r.scheduled_at, r.first_id
        LIMIT $3 FOR UPDATE OF r SKIP LOCKED FOR KEY SHARE OF w SKIP LOCKED
     ), range_fronts AS MATERIALIZED (
       SELECT p.workflow_id, p.template, p.lo, i, p.priority, p.scheduled_at, p.first_id + (i - p.base) AS id
         FROM (SELECT *, sum(hi - lo) OVER (ORDER BY priority, scheduled_at, first_id) - (hi - lo) AS before FROM ranges) p
        CROSS JOIN LATERAL generate_series(p.lo, least(p.hi, p.lo + $3 - p.before::int) - 1) AS i
        WHERE p.before < $3
     ), chosen AS MATERIALIZED (
       SELECT * FROM (
         SELECT ctid, NULL::text AS workflow_id, NULL::text AS template, NULL::int AS lo, priority, scheduled_at, id FROM ahead
         UNION ALL SELECT ctid, NULL, NULL, NULL, priority, scheduled_at, id FROM behind
         UNION ALL SELECT NULL::tid, workflow_id, template, lo, priority, scheduled_at, id FROM range_fronts) c
        ORDER BY priority, scheduled_at, id LIMIT $3
     )`;
}

/** The columns of a range that a split's running range copies from it. */
const COPIED = `kind, queue, priority, max_attempts, deps, dependents, deps_left, scheduled_at, timeout_ms, retry, ignore_cancelled_deps,
                ignore_discarded_deps, ignore_deleted_deps, ignore_skipped_deps, metadata, description, cancel_requested, created_at, dependents_wait`;

/**
 * The most items a running range holds: a completion rewrites the outputs and finish times of each running range it
 * completes items of, so its cost per item grows with this (a claim's split writes a row per this many items).
 */
export const RUNNING_RANGE_MAX = 64;

/**
 * CTEs that take the chosen items from their ranges, and `claimed_ranged`: those items as claimed, by name
 * (`workflow_id`, `name`, for the claim's record), and with `compact` false also with the columns of a claimed row
 * (their `tid` is `r<lo>:<index>`: their running range's key and their index, which the completion finds them by).
 * With `compact` the statement returns the running ranges themselves (rangesJsonSql), one entry each, which the
 * worker reads as their items (decodeRanges): no item is made a row, in SQL or in JSON. A range taken in part moves
 * its front (lo) past the items, one taken whole goes; the items go into running ranges of the worker,
 * RUNNING_RANGE_MAX items each, with their own args (`cut`: the claimed part of the args, read once). The insert
 * reads the update's and the delete's rows, so the keys it reuses are free by then.
 */
export function rangedClaimSql(s: string, compact: boolean): string {
  const copied = COPIED.split(',')
    .map((c) => `(x.r).${c.trim()}`)
    .join(', ');
  const n = RUNNING_RANGE_MAX;
  return `taken AS MATERIALIZED (
       SELECT workflow_id, template, lo, count(*)::int AS k FROM chosen WHERE lo IS NOT NULL GROUP BY 1, 2, 3
     ), shrunk AS (
       UPDATE ${s}.task_ranges r SET lo = r.lo + t.k
         FROM taken t
        WHERE r.workflow_id = t.workflow_id AND r.template = t.template AND r.lo = t.lo AND t.k < r.hi - r.lo
        RETURNING r, r.lo - t.k AS from_lo, r.lo AS to_hi
     ), emptied AS (
       DELETE FROM ${s}.task_ranges r
        USING taken t
        WHERE r.workflow_id = t.workflow_id AND r.template = t.template AND r.lo = t.lo AND t.k = r.hi - r.lo
        RETURNING r, r.lo AS from_lo, r.hi AS to_hi
     ), cut AS MATERIALIZED (
       SELECT x.r, x.from_lo, x.to_hi,
              jsonb_path_query_array((x.r).args, '$[$a to $b]', jsonb_build_object('a', x.from_lo - (x.r).base, 'b', x.to_hi - 1 - (x.r).base)) AS part
         FROM (SELECT * FROM shrunk UNION ALL SELECT * FROM emptied) x
     ), split AS (
       INSERT INTO ${s}.task_ranges AS n (workflow_id, template, lo, hi, base, first_id, state, attempt, worker_id, started_at, args,
                                          ${COPIED})
       SELECT (x.r).workflow_id, (x.r).template, c.lo, least(c.lo + ${n}, x.to_hi), c.lo, (x.r).first_id + (c.lo - (x.r).base),
              'running', (x.r).attempt + 1, $4, $5,
              jsonb_path_query_array(x.part, '$[$a to $b]', jsonb_build_object('a', c.lo - x.from_lo, 'b', least(c.lo + ${n}, x.to_hi) - 1 - x.from_lo)),
              ${copied}
         FROM cut x CROSS JOIN LATERAL generate_series(x.from_lo, x.to_hi - 1, ${n}) AS c(lo)
       RETURNING n
     ), claimed_ranged AS (${
       compact
         ? `
       SELECT (x.r).workflow_id, (x.r).template || '[' || i || ']' AS name FROM split x(r) CROSS JOIN LATERAL generate_series((x.r).lo, (x.r).hi - 1) AS i`
         : `
       SELECT i.workflow_id, i.name, i.template, i.kind, i.queue, i.attempt, i.max_attempts, i.args, i.deps, i.dependents, i.dependents_wait,
              i.timeout_ms, i.start, i.deferred, i.wait_evidence, 'r' || (x.r).lo || ':' || i.idx AS tid, NULL::text AS flow_error, 0 AS ord
         FROM split x(r) CROSS JOIN LATERAL ${s}.range_items(x.r, (x.r).lo, (x.r).hi) i`
     }
     )`;
}

/**
 * The claim's running ranges as one JSON array, an entry each, its fields in the order of docs/protocol.md's
 * `ranges` (decodeRanges in sql/fetch.ts reads them). A ranged item holds no deps, dependents, wait, deferred
 * args, child workflow or sealed value (engine/range-split.ts), so its range's columns and its args are all a
 * claimed item is.
 */
export const rangesJsonSql = `(SELECT json_agg(json_build_array((x.r).workflow_id, (x.r).template, (x.r).lo, (x.r).hi, (x.r).kind, (x.r).queue,
                                     (x.r).attempt, (x.r).max_attempts, (x.r).timeout_ms, (x.r).args)) FROM split x(r))`;
