import type { Queryable } from '../db/types.js';

/**
 * Empties every table that holds runs (workflows, their tasks, signals, timers, effects, waits on others,
 * workers and their claims, the leader, the deployed schedules, pauses and the audit trail), keeping the definitions: what `braid test` does between tests, so
 * each starts as on a fresh database with the project's definitions registered. DELETE, dependents first:
 * on the tiny tables of a test it is five times faster than TRUNCATE on the embedded database.
 */
export async function resetRuns(q: Queryable, s: string): Promise<void> {
  for (const table of [
    'event_starts',
    'events',
    'workflow_waiters',
    'effects',
    'timers',
    'signals',
    'tasks',
    'workflow_upgrades',
    'workflows',
    'claims',
    'workers',
    'leader',
    'change_listeners',
    'schedules',
    'pauses',
    'audit',
  ]) {
    await q.query(`DELETE FROM ${s}.${table}`);
  }
}

/**
 * A workflow that ended elsewhere, recorded as ended, with no tasks: what a test declares for a `workflows` wait
 * that awaits an id it does not run (before anything starts, so no wait has registered on it yet).
 */
export async function recordEnded(
  q: Queryable,
  s: string,
  w: { id: string; name: string; hash: string; state: string; output: unknown; at: Date },
): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.workflows (id, name, definition_hash, inputs, state, output, tasks_total, tasks_open, created_at, attempt_started_at, finalized_at)
     VALUES ($1, $2, $3, '{}'::jsonb, $4, $5, 0, 0, $6, $6, $6)`,
    [w.id, w.name, w.hash, w.state, JSON.stringify(w.output ?? null), w.at],
  );
}
