import type { Queryable } from '../db/types.js';
import { isFinalSql } from './rules.js';

/** Scheduled and retryable tasks whose time has come become available (a bounded batch per call). */
export async function promoteDue(q: Queryable, s: string, now: Date, limit = 1000): Promise<number> {
  const { rows } = await q.query<{ queue: string }>(
    `UPDATE ${s}.tasks t SET state = 'available'
       FROM (SELECT workflow_id, name FROM ${s}.tasks WHERE lane IN ('scheduled', 'retryable') AND scheduled_at <= $1
              ORDER BY scheduled_at LIMIT $2 FOR UPDATE SKIP LOCKED) d
      WHERE t.workflow_id = d.workflow_id AND t.name = d.name
      RETURNING t.queue`,
    [now, limit],
  );
  return rows.length;
}

export async function forgetDeadWorkers(q: Queryable, s: string, before: Date): Promise<void> {
  await q.query(`DELETE FROM ${s}.workers w WHERE w.heartbeat_at < $1 AND NOT EXISTS (SELECT 1 FROM ${s}.claims c WHERE c.worker_id = w.id)`, [before]);
}

export interface RetentionPolicy {
  /** Completed and failed workflows are deleted this long after they finalized; null keeps them. */
  closedMs: number | null;
  /** Cancelled workflows likewise. */
  cancelledMs: number | null;
  /**
   * Opt-in per-task mode: finalized task rows are deleted this long after they finalized, even in running
   * workflows (their dependents then see a deleted dep); null (the default) keeps them with their workflow.
   */
  taskMs: number | null;
  /** Audit lines are deleted this long after they were written. */
  auditMs: number;
}

/**
 * Workflow-aware retention: a finalized workflow is deleted as a unit — its tasks, signals, timers, evidence,
 * wait registrations and pending effects — once its period passed; running workflows are never touched.
 * Bounded batches; returns how many workflows were deleted.
 */
export async function deleteExpiredWorkflows(q: Queryable, s: string, policy: RetentionPolicy, now: Date, limit = 500): Promise<number> {
  let deleted = 0;
  // a failed run its definition keeps (keep_until) goes at its own time, never by the runtime's period
  const rules: [string, string[], Date | null][] = [
    ['keep_until IS NULL AND finalized_at < $2 ORDER BY finalized_at', ['completed', 'failed'], before(now, policy.closedMs)],
    ['keep_until IS NULL AND finalized_at < $2 ORDER BY finalized_at', ['cancelled'], before(now, policy.cancelledMs)],
    ['keep_until IS NOT NULL AND keep_until < $2 ORDER BY keep_until', ['failed'], now],
  ];
  for (const [which, states, cutoff] of rules) {
    if (cutoff === null) continue;
    // tasks, signals and timers go by foreign key; the rows keyed by workflow without one go here
    const { rows } = await q.query<{ n: number }>(
      `WITH gone AS (
         DELETE FROM ${s}.workflows WHERE id IN (
           SELECT id FROM ${s}.workflows WHERE state = ANY($1::text[]) AND ${which} LIMIT $3)
         RETURNING id
       ), effects AS (
         DELETE FROM ${s}.effects WHERE workflow_id IN (SELECT id FROM gone)
       ), waiters AS (
         DELETE FROM ${s}.workflow_waiters WHERE workflow_id IN (SELECT id FROM gone)
       )
       SELECT count(*)::int AS n FROM gone`,
      [states, cutoff, limit],
    );
    deleted += rows[0].n;
  }
  return deleted;
}

const before = (now: Date, ms: number | null) => (ms === null ? null : new Date(now.getTime() - ms));

/**
 * Per-task retention (opt-in): running workflows old enough to hold a task finalized before the cutoff, in
 * bounded batches. Each is then handled in its own transaction.
 */
export async function workflowsWithExpiredTasks(q: Queryable, s: string, cutoff: Date, limit = 200): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT w.id FROM ${s}.workflows w WHERE w.state = 'running' AND w.created_at < $1
        AND EXISTS (SELECT 1 FROM ${s}.tasks t WHERE t.workflow_id = w.id AND ${isFinalSql('t.state')} AND t.finalized_at < $1)
      LIMIT $2`,
    [cutoff, limit],
  );
  return rows.map((r) => r.id);
}

export async function expiredTasks(q: Queryable, s: string, workflowId: string, cutoff: Date): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(`SELECT name FROM ${s}.tasks WHERE workflow_id = $1 AND ${isFinalSql('state')} AND finalized_at < $2`, [
    workflowId,
    cutoff,
  ]);
  return rows.map((r) => r.name);
}

/**
 * Operator records past their time, in bounded batches: bulk operations finished before `bulkBefore` (their
 * items with them), audit lines written before `auditBefore`.
 */
export async function forgetOperatorRecords(q: Queryable, s: string, bulkBefore: Date, auditBefore: Date, limit = 1000): Promise<void> {
  await q.query(
    `DELETE FROM ${s}.bulk_operations WHERE name IN (
       SELECT name FROM ${s}.bulk_operations WHERE state <> 'running' AND finished_at < $1 ORDER BY finished_at LIMIT $2)`,
    [bulkBefore, limit],
  );
  await q.query(`DELETE FROM ${s}.audit WHERE id IN (SELECT id FROM ${s}.audit WHERE at < $1 ORDER BY at LIMIT $2)`, [auditBefore, limit]);
}
