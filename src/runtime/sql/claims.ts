import type { Queryable } from '../db/types.js';

/**
 * Claims: what each worker holds. A statement that makes tasks running for a worker (a fetch, a completion
 * that claims dependents) records them in the same statement, as one row per claim; the worker deletes the
 * row once every attempt in it has ended, and the leader rescues a dead worker's attempts through its rows.
 * So no index lists running tasks, and completing a task changes no indexed column (see migration 009).
 */

/**
 * A data-modifying CTE body that records the rows of `source` (with workflow_id and name) as one claim of
 * worker `$worker` at `$at`, returning its id; nothing when `source` is empty.
 */
export function recordClaimSql(s: string, source: string, worker: string, at: string): string {
  return `INSERT INTO ${s}.claims (worker_id, claimed_at, workflow_ids, names)
       SELECT ${worker}, ${at}, array_agg(workflow_id), array_agg(name) FROM ${source} HAVING count(*) > 0
       RETURNING id`;
}

/** A data-modifying CTE body that deletes the worker's claims listed in `ids` (a bigint[] parameter). */
export function forgetClaimsSql(s: string, ids: string, worker: string): string {
  return `DELETE FROM ${s}.claims WHERE id = ANY(${ids}::bigint[]) AND worker_id = ${worker}`;
}

/** Deletes claims whose attempts have all ended (when no fetch is coming to carry them). */
export async function forgetClaims(q: Queryable, s: string, workerId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await q.query(forgetClaimsSql(s, '$1', '$2'), [ids, workerId]);
}

/**
 * A CTE of the claims of workers that stopped heartbeating (or stopped), or whose record is gone; materialized,
 * so that only their tasks are looked up, never those of live workers' claims.
 */
const deadClaims = (s: string) => `dead AS MATERIALIZED (
       SELECT c.* FROM ${s}.claims c LEFT JOIN ${s}.workers w ON w.id = c.worker_id
        WHERE w.id IS NULL OR w.heartbeat_at < $1 OR w.stopped_at IS NOT NULL)`;

/**
 * The tasks of claim `c` still running for its worker (a task has a worker exactly while it runs): one key
 * lookup per claimed task (a lateral subquery with LIMIT 1, so no plan can scan the tasks table for running
 * rows instead).
 */
const stillRunning = (s: string, c: string) => `unnest(${c}.workflow_ids, ${c}.names) AS k(workflow_id, name)
       CROSS JOIN LATERAL (SELECT t.workflow_id, t.name, t.attempt, t.worker_id FROM ${s}.tasks t
                            WHERE t.workflow_id = k.workflow_id AND t.name = k.name LIMIT 1) t
      WHERE t.worker_id = ${c}.worker_id`;

export interface LostAttempt {
  workflow_id: string;
  name: string;
  attempt: number;
  worker_id: string;
  /** `dead`: the worker stopped heartbeating; `abandoned`: a live worker could not record the attempt's end. */
  why: 'dead' | 'abandoned';
}

/**
 * Attempts to rescue: those still running for a dead worker, found through its claims, and those a live
 * worker lists as abandoned (the workers table is one row per process: reading it whole is cheap).
 */
export async function lostAttempts(q: Queryable, s: string, deadBefore: Date, limit = 1000): Promise<LostAttempt[]> {
  const { rows } = await q.query<LostAttempt>(
    `WITH ${deadClaims(s)}
     (SELECT t.workflow_id, t.name, t.attempt, t.worker_id, 'dead' AS why FROM dead c CROSS JOIN LATERAL ${stillRunning(s, 'c')} LIMIT $2)
     UNION ALL
     (SELECT t.workflow_id, t.name, t.attempt, t.worker_id, 'abandoned' AS why
        FROM ${s}.workers w CROSS JOIN LATERAL jsonb_to_recordset(w.abandoned) AS a(workflow_id text, name text, attempt int)
        CROSS JOIN LATERAL (SELECT t.workflow_id, t.name, t.attempt, t.worker_id FROM ${s}.tasks t
                             WHERE t.workflow_id = a.workflow_id AND t.name = a.name LIMIT 1) t
       WHERE w.abandoned IS NOT NULL AND w.heartbeat_at >= $1 AND w.stopped_at IS NULL AND t.worker_id = w.id AND t.attempt = a.attempt LIMIT $2)`,
    [deadBefore, limit],
  );
  return rows;
}

/**
 * Workflows with ranges running for a worker that stopped heartbeating (or stopped, or whose record is gone): the
 * rescuer locks them (lockWorkflows), which gives those items rows, before it looks for the attempts to rescue.
 */
export async function deadRangesWorkflows(q: Queryable, s: string, deadBefore: Date, limit = 100): Promise<string[]> {
  const { rows } = await q.query<{ workflow_id: string }>(
    `SELECT DISTINCT r.workflow_id FROM ${s}.task_ranges r LEFT JOIN ${s}.workers w ON w.id = r.worker_id
      WHERE r.worker_id IS NOT NULL AND (w.id IS NULL OR w.heartbeat_at < $1 OR w.stopped_at IS NOT NULL) ORDER BY 1 LIMIT $2`,
    [deadBefore, limit],
  );
  return rows.map((r) => r.workflow_id);
}

/** Workflows with ranges running for this worker: a worker's path that looks its attempts up by row locks them first. */
export async function workerRangesWorkflows(q: Queryable, s: string, workerId: string): Promise<string[]> {
  const { rows } = await q.query<{ workflow_id: string }>(`SELECT DISTINCT workflow_id FROM ${s}.task_ranges WHERE worker_id = $1 ORDER BY 1`, [workerId]);
  return rows.map((r) => r.workflow_id);
}

/** Deletes a dead worker's claims once none of their attempts is still running for it (after rescue). */
export async function forgetLostClaims(q: Queryable, s: string, deadBefore: Date): Promise<number> {
  const { rows } = await q.query<{ id: string }>(
    `WITH ${deadClaims(s)}
     DELETE FROM ${s}.claims x USING dead c
      WHERE x.id = c.id AND NOT EXISTS (SELECT 1 FROM ${stillRunning(s, 'c')})
      RETURNING x.id`,
    [deadBefore],
  );
  return rows.length;
}
