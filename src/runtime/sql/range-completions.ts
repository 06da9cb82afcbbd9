/**
 * The completion's part for items of running ranges (migration 047): an attempt claimed from a range names its
 * running range's key and its index (`rlo`, `ri`, from its `r<lo>:<index>` address) and is completed there, each item's output and finish time
 * filled in (finish_range_items(); a range whose every item finished is completed). A fragment of the completion
 * statements (sql/complete.ts), read under the workflows' locks (the protocol's complete() takes them first): only
 * a completion holding that lock, or lock_workflows(), changes a running range, so the rows it reads are current.
 * An attempt that is not its range's (another attempt, another worker, finished already, a large output, a range
 * given rows meanwhile) is left to the completion by key, which gives the workflow's items rows first.
 */

/** CTEs `ranged` (the batch's attempts that complete an item of a running range, one per item) and `ranged_done`. */
export function rangedCompletionSql(s: string, also: string): string {
  return `ranged AS MATERIALIZED (
       SELECT DISTINCT ON (v.workflow_id, v.name) v.workflow_id, v.name, v.ri AS i, v.rlo, r.template, v.output, r.dependents
         FROM items v
        -- the item's template is its name but its index ("leaf[7]"): the range is looked up by its key
        CROSS JOIN LATERAL (SELECT * FROM ${s}.task_ranges x WHERE x.workflow_id = v.workflow_id
                               AND x.template = left(v.name, length(v.name) - length(v.ri::text) - 2) AND x.lo = v.rlo) r
        WHERE v.rlo IS NOT NULL AND v.output_bytes IS NULL AND v.name = r.template || '[' || v.ri || ']' AND r.state = 'running'
          AND r.worker_id = v.worker_id AND r.attempt = v.attempt AND v.ri >= r.lo AND v.ri < r.hi AND r.finished_at[v.ri - r.base + 1] IS NULL ${also}
     ), ranged_done AS (
       UPDATE ${s}.task_ranges r
          SET (outputs, finished_at, state, worker_id, completed_by, finalized_at) = (SELECT * FROM ${s}.finish_range_items(r, g.outs, $2))
         FROM (SELECT workflow_id, template, rlo, jsonb_object_agg(i::text, output) AS outs FROM ranged GROUP BY 1, 2, 3) g
        WHERE r.workflow_id = g.workflow_id AND r.template = g.template AND r.lo = g.rlo
        RETURNING 1
     )`;
}
