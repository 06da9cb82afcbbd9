import type { Queryable } from '../db/types.js';
import { notifyQueues } from './advance.js';

/** Scheduled and retryable tasks whose time has come become available (a bounded batch per call). */
export async function promoteDue(q: Queryable, s: string, schema: string, now: Date, limit = 1000): Promise<number> {
  const { rows } = await q.query<{ queue: string }>(
    `UPDATE ${s}.tasks t SET state = 'available'
       FROM (SELECT workflow_id, name FROM ${s}.tasks WHERE state IN ('scheduled', 'retryable') AND scheduled_at <= $1
              ORDER BY scheduled_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
      WHERE t.workflow_id = d.workflow_id AND t.name = d.name
      RETURNING t.queue`,
    [now, limit],
  );
  await notifyQueues(q, schema, rows.map((r) => r.queue));
  return rows.length;
}

/** Running attempts whose worker stopped heartbeating (or stopped without finishing them). */
export async function lostAttempts(q: Queryable, s: string, deadBefore: Date, limit = 1000): Promise<{ workflow_id: string; name: string; attempt: number; worker_id: string }[]> {
  const { rows } = await q.query<{ workflow_id: string; name: string; attempt: number; worker_id: string }>(
    `SELECT t.workflow_id, t.name, t.attempt, t.worker_id FROM ${s}.tasks t LEFT JOIN ${s}.workers w ON w.id = t.worker_id
      WHERE t.state = 'running' AND (w.id IS NULL OR w.heartbeat_at < $1 OR w.stopped_at IS NOT NULL)
      LIMIT $2`,
    [deadBefore, limit],
  );
  return rows;
}

export async function forgetDeadWorkers(q: Queryable, s: string, before: Date): Promise<void> {
  await q.query(`DELETE FROM ${s}.workers w WHERE w.heartbeat_at < $1 AND NOT EXISTS (SELECT 1 FROM ${s}.tasks t WHERE t.worker_id = w.id AND t.state = 'running')`, [before]);
}

export interface RetentionPolicy {
  /** Completed and failed workflows are deleted this long after they finalized; null keeps them. */
  closedMs: number | null;
  /** Cancelled workflows likewise. */
  cancelledMs: number | null;
}

/**
 * Workflow-aware retention: a finalized workflow is deleted as a unit (its tasks go with it) once its period
 * passed; running workflows are never touched. Bounded batches; returns how many workflows were deleted.
 */
export async function deleteExpiredWorkflows(q: Queryable, s: string, policy: RetentionPolicy, now: Date, limit = 500): Promise<number> {
  let deleted = 0;
  const rules: [string[], number | null][] = [
    [['completed', 'failed'], policy.closedMs],
    [['cancelled'], policy.cancelledMs],
  ];
  for (const [states, ms] of rules) {
    if (ms === null) continue;
    const { rowCount } = await q.query(
      `DELETE FROM ${s}.workflows WHERE id IN (
         SELECT id FROM ${s}.workflows WHERE state = ANY($1::text[]) AND finalized_at < $2 ORDER BY finalized_at LIMIT $3)`,
      [states, new Date(now.getTime() - ms), limit],
    );
    deleted += rowCount;
  }
  return deleted;
}
