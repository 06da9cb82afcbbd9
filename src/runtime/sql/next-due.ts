import type { Queryable } from '../db/types.js';
import { bufferedFree } from './schedules.js';

/**
 * When maintenance next has something to do at a later time: the nearest unfired timer, deadline of a running
 * workflow, scheduled or retrying task, or schedule tick. Null when nothing is waiting on the clock. (A test's virtual clock
 * jumps there when nothing else can run.)
 */
export async function nextDue(q: Queryable, s: string): Promise<Date | null> {
  const { rows } = await q.query<{ at: Date | null }>(
    `SELECT least(
       (SELECT min(fire_at) FROM ${s}.timers WHERE fired_at IS NULL),
       (SELECT min(deadline_at) FROM ${s}.workflows WHERE state = 'running' AND deadline_at IS NOT NULL AND end_reason IS NULL AND NOT cancel_requested),
       (SELECT min(scheduled_at) FROM ${s}.tasks WHERE lane IN ('scheduled', 'retryable')),
       (SELECT min(next_fire_at) FROM ${s}.schedules WHERE NOT paused)
     ) AS at`,
  );
  return rows[0]?.at ? new Date(rows[0].at) : null;
}

/** Whether any task is available to run (claimable now). */
export async function anyAvailable(q: Queryable, s: string): Promise<boolean> {
  const { rows } = await q.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${s}.tasks WHERE lane = 'available') AS any`);
  return rows[0].any;
}

/**
 * Whether maintenance has anything to do at `now`: a timer, deadline or scheduled task due, or an effect to
 * apply. One look, where a round of the services is several statements.
 */
export async function maintenanceDue(q: Queryable, s: string, now: Date): Promise<boolean> {
  const { rows } = await q.query<{ due: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${s}.effects)
         OR EXISTS (SELECT 1 FROM ${s}.timers WHERE fired_at IS NULL AND fire_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.tasks WHERE lane IN ('scheduled', 'retryable') AND scheduled_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.workflows WHERE state = 'running' AND deadline_at <= $1 AND end_reason IS NULL AND NOT cancel_requested)
         OR EXISTS (SELECT 1 FROM ${s}.schedules WHERE NOT paused AND next_fire_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.schedules sc WHERE ${bufferedFree('sc', s)}) AS due`,
    [now],
  );
  return rows[0].due;
}
