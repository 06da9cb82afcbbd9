import type { Queryable } from '../db/types.js';
import type { TaskRecord } from './workflows.js';

/** A claimed attempt: only the task's columns a handler run needs (each claims many), with its deps' outputs. */
export type FetchedTask = Pick<
  TaskRecord,
  'workflow_id' | 'name' | 'template' | 'kind' | 'queue' | 'attempt' | 'max_attempts' | 'args' | 'deps' | 'dependents' | 'timeout_ms' | 'start'
> & {
  /** Some dependent has a wait that this task's completion may activate. */
  dependents_wait: boolean;
  /** Direct deps' outputs by name, read in the same statement that claimed the task. */
  dep_outputs: Record<string, unknown> | null;
  /** Where the claimed row version lives ("(page,item)"): its completion finds it there unless it moved since. */
  tid: string;
};

/**
 * Claims up to `limit` available tasks of a queue for one worker in one statement: the inner SELECT skips
 * rows other workers hold, so each task attempt runs once at a time.
 */
export async function fetchTasks(q: Queryable, s: string, p: { queue: string; kinds: readonly string[]; limit: number; workerId: string; now: Date }): Promise<FetchedTask[]> {
  // one JSON value for the whole batch: one parse, rather than a type parser per column of every row
  const { rows } = await q.query<{ tasks: FetchedTask[] | null }>(
    `WITH claimed AS (
       UPDATE ${s}.tasks t SET state = 'running', attempt = t.attempt + 1, started_at = $5, worker_id = $4
        WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM ${s}.tasks
                WHERE state = 'available' AND queue = $1 AND kind = ANY($2::text[])
                ORDER BY priority, scheduled_at, id
                LIMIT $3 FOR UPDATE SKIP LOCKED))
        RETURNING t.workflow_id, t.name, t.template, t.kind, t.queue, t.attempt, t.max_attempts, t.args, t.deps,
                  t.dependents, t.dependents_wait, t.timeout_ms, t.start, t.ctid AS tid)
     SELECT json_agg(r) AS tasks FROM (
       SELECT c.*, CASE WHEN cardinality(c.deps) > 0 THEN
                (SELECT jsonb_object_agg(d.name, d.output) FROM ${s}.tasks d WHERE d.workflow_id = c.workflow_id AND d.name = ANY(c.deps))
              END AS dep_outputs
         FROM claimed c) r`,
    [p.queue, p.kinds, p.limit, p.workerId, p.now],
    { prepare: true },
  );
  return rows[0]?.tasks ?? [];
}
