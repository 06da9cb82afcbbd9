import type { Queryable } from '../db/types.js';
import { openSql } from './fetch.js';
import { pausedTaskSql } from './pauses.js';
import { bufferedFree } from './schedules.js';

/**
 * When something next becomes due at a later time: the nearest unfired timer, deadline of a running workflow,
 * scheduled or retrying task, schedule tick, on_failure group's window with failures counted, or token of a rate
 * limit a waiting task needs. Null when nothing is waiting on the clock. (A test's virtual clock jumps there when nothing else can run.)
 */
export async function nextDue(q: Queryable, s: string, now: Date): Promise<Date | null> {
  const { rows } = await q.query<{ at: Date | null }>(
    `SELECT least(
       (SELECT min(fire_at) FROM ${s}.timers WHERE fired_at IS NULL),
       (SELECT min(deadline_at) FROM ${s}.workflows WHERE state = 'running' AND deadline_at IS NOT NULL AND end_reason IS NULL AND NOT cancel_requested),
       (SELECT min(scheduled_at) FROM ${s}.tasks WHERE lane IN ('scheduled', 'retryable')),
       (SELECT min(next_fire_at) FROM ${s}.schedules WHERE NOT paused),
       (SELECT min(window_ends_at) FROM ${s}.failure_groups WHERE pending > 0),
       (SELECT min(r.starts[1] + l.per_ms * interval '1 millisecond')
          FROM (SELECT DISTINCT flow #>> '{rate_limit,key}' AS key, ${s}.flow_count(flow #> '{rate_limit,limit}') AS lim,
                       ${s}.flow_per_ms(flow #> '{rate_limit,per_ms}') AS per_ms
                  FROM ${s}.tasks WHERE lane = 'flow' AND flow_parked IS NULL AND flow ? 'rate_limit') l
          JOIN ${s}.flow_rates r ON r.key = l.key WHERE cardinality(r.starts) >= l.lim AND r.starts[1] + l.per_ms * interval '1 millisecond' > $1)
     ) AS at`,
    [now],
  );
  return rows[0]?.at ? new Date(rows[0].at) : null;
}

/** Whether any task could be claimed at `now`: an available one, or one with flow control that its limits let start. */
export async function anyAvailable(q: Queryable, s: string, now: Date): Promise<boolean> {
  const { rows } = await q.query<{ any: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${s}.tasks t WHERE lane = 'available' AND NOT ${pausedTaskSql(s, 't')})
         OR EXISTS (SELECT 1 FROM ${s}.task_ranges r WHERE r.state = 'available' AND NOT ${pausedTaskSql(s, 'r')})
         OR EXISTS (SELECT 1 FROM (SELECT DISTINCT t.queue FROM ${s}.tasks t WHERE lane = 'flow' AND flow_parked IS NULL) q
                     CROSS JOIN LATERAL (${openSql(s, 'q.queue', `ARRAY(SELECT DISTINCT kind FROM ${s}.tasks WHERE lane = 'flow' AND queue = q.queue)`)}) o
                     CROSS JOIN LATERAL ${s}.flow_pick(q.queue, o.kinds, 1, $1, true) f WHERE o.queue_open AND f.wid IS NOT NULL) AS any`,
    [now],
  );
  return rows[0].any;
}

/**
 * Whether maintenance has anything to do at `now`: a timer, deadline, scheduled task or failure group's window
 * due, or an effect to apply. One look, where a round of the services is several statements.
 */
export async function maintenanceDue(q: Queryable, s: string, now: Date): Promise<boolean> {
  const { rows } = await q.query<{ due: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${s}.effects)
         OR EXISTS (SELECT 1 FROM ${s}.timers WHERE fired_at IS NULL AND fire_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.tasks WHERE lane IN ('scheduled', 'retryable') AND scheduled_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.workflows WHERE state = 'running' AND deadline_at <= $1 AND end_reason IS NULL AND NOT cancel_requested)
         OR EXISTS (SELECT 1 FROM ${s}.schedules WHERE NOT paused AND next_fire_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.failure_groups WHERE window_ends_at <= $1)
         OR EXISTS (SELECT 1 FROM ${s}.schedules sc WHERE ${bufferedFree('sc', s)}) AS due`,
    [now],
  );
  return rows[0].due;
}
