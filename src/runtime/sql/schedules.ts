import type { NormalizedSchedule } from '../../compiler/normalize.js';
import type { Queryable } from '../db/types.js';

/** The statements of schedules: their rows (one per workflow name and schedule) and the runs they started. */

export interface ScheduleRow {
  workflow_name: string;
  name: string;
  definition_hash: string;
  spec: NormalizedSchedule;
  paused: boolean;
  since: Date;
  last_tick: Date | null;
  next_tick: Date | null;
  next_fire_at: Date | null;
  buffered_tick: Date | null;
  last_run_id: string | null;
  last_outcome: string | null;
  last_error: string | null;
  updated_at: Date;
  last_lag_ms: string | null;
  missed_ticks: string;
  missed_at: Date | null;
}

const COLUMNS = `workflow_name, name, definition_hash, spec, paused, since, last_tick, next_tick, next_fire_at, buffered_tick,
  last_run_id, last_outcome, last_error, updated_at, last_lag_ms, missed_ticks, missed_at`;

/** One workflow's schedule rows, locked (a deploy replaces them under the lock). */
export async function lockSchedulesOf(q: Queryable, s: string, workflow: string): Promise<ScheduleRow[]> {
  const { rows } = await q.query<ScheduleRow>(`SELECT ${COLUMNS} FROM ${s}.schedules WHERE workflow_name = $1 ORDER BY name FOR UPDATE`, [workflow]);
  return rows;
}

export async function deleteSchedules(q: Queryable, s: string, workflow: string, names: readonly string[]): Promise<void> {
  if (names.length > 0) await q.query(`DELETE FROM ${s}.schedules WHERE workflow_name = $1 AND name = ANY($2::text[])`, [workflow, names]);
}

/** A schedule as a version deploys it: its spec, pause and clock (the service's history, last_*, stays). */
export async function putSchedule(
  q: Queryable,
  s: string,
  row: { workflow: string; name: string; hash: string; spec: NormalizedSchedule; paused: boolean; since: Date; nextTick: Date | null; nextFireAt: Date | null },
): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.schedules (workflow_name, name, definition_hash, spec, paused, since, next_tick, next_fire_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $6)
     ON CONFLICT (workflow_name, name) DO UPDATE SET definition_hash = EXCLUDED.definition_hash, spec = EXCLUDED.spec,
       paused = EXCLUDED.paused, next_tick = EXCLUDED.next_tick, next_fire_at = EXCLUDED.next_fire_at,
       buffered_tick = CASE WHEN EXCLUDED.spec->>'overlap' = 'buffer_one' THEN ${s}.schedules.buffered_tick END, updated_at = EXCLUDED.updated_at`,
    [row.workflow, row.name, row.hash, JSON.stringify(row.spec), row.paused, row.since, row.nextTick, row.nextFireAt],
  );
}

/** A schedule (as `alias`) holds a buffered tick and none of its runs is running any more: the tick can start. */
export function bufferedFree(alias: string, s: string): string {
  return `${alias}.buffered_tick IS NOT NULL AND NOT ${alias}.paused AND NOT EXISTS (SELECT 1 FROM ${s}.workflows w
    WHERE w.name = ${alias}.workflow_name AND w.schedule = ${alias}.name AND w.state = 'running')`;
}

/** Schedules with a tick to fire by `now`, or a buffered tick free to start, soonest first (no lock: each tick locks its row). */
export async function dueSchedules(q: Queryable, s: string, now: Date, limit: number): Promise<{ workflow_name: string; name: string; at: Date }[]> {
  const { rows } = await q.query<{ workflow_name: string; name: string; at: Date }>(
    `(SELECT workflow_name, name, next_fire_at AS at FROM ${s}.schedules WHERE NOT paused AND next_fire_at IS NOT NULL AND next_fire_at <= $1
      ORDER BY next_fire_at LIMIT $2)
     UNION
     (SELECT workflow_name, name, buffered_tick AS at FROM ${s}.schedules sc WHERE ${bufferedFree('sc', s)} LIMIT $2)
     ORDER BY at LIMIT $2`,
    [now, limit],
  );
  return rows;
}

/** When the soonest schedule fires next (null: none is due ever, or all are paused). */
export async function nextScheduleFire(q: Queryable, s: string): Promise<Date | null> {
  const { rows } = await q.query<{ at: Date | null }>(`SELECT min(next_fire_at) AS at FROM ${s}.schedules WHERE NOT paused`);
  return rows[0]?.at ? new Date(rows[0].at) : null;
}

/** One schedule's row, locked for a tick; undefined when it is gone, or another process holds it (that one fires it). */
export async function lockSchedule(q: Queryable, s: string, workflow: string, name: string, wait = false): Promise<ScheduleRow | undefined> {
  const { rows } = await q.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM ${s}.schedules WHERE workflow_name = $1 AND name = $2 FOR UPDATE${wait ? '' : ' SKIP LOCKED'}`,
    [workflow, name],
  );
  return rows[0];
}

export async function readSchedules(q: Queryable, s: string, workflow?: string): Promise<ScheduleRow[]> {
  const { rows } = await q.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM ${s}.schedules WHERE $1::text IS NULL OR workflow_name = $1 ORDER BY workflow_name, name`,
    [workflow ?? null],
  );
  return rows;
}

/** What a tick did: the schedule's state after it. */
export async function recordTick(
  q: Queryable,
  s: string,
  workflow: string,
  name: string,
  state: {
    lastTick: Date | null;
    nextTick: Date | null;
    nextFireAt: Date | null;
    bufferedTick: Date | null;
    runId?: string | null;
    outcome: string;
    error?: string | null;
    now: Date;
    /** How long after its fire time the tick started. */
    lagMs: number;
    /** Ticks passed over to reach this one (they never run). */
    missed: number;
  },
): Promise<void> {
  await q.query(
    `UPDATE ${s}.schedules SET last_tick = $3, next_tick = $4, next_fire_at = $5, buffered_tick = $6,
       last_run_id = coalesce($7, last_run_id), last_outcome = $8, last_error = $9, updated_at = $10, last_lag_ms = $11,
       missed_ticks = missed_ticks + $12, missed_at = CASE WHEN $12::bigint > 0 THEN $10 ELSE missed_at END
     WHERE workflow_name = $1 AND name = $2`,
    [
      workflow,
      name,
      state.lastTick,
      state.nextTick,
      state.nextFireAt,
      state.bufferedTick,
      state.runId ?? null,
      state.outcome,
      state.error ?? null,
      state.now,
      Math.max(0, Math.round(state.lagMs)),
      state.missed,
    ],
  );
}

/** A manual trigger's run is the schedule's last run (its clock, last_tick, is not moved). */
export async function recordTrigger(q: Queryable, s: string, workflow: string, name: string, runId: string, now: Date): Promise<void> {
  await q.query(
    `UPDATE ${s}.schedules SET last_run_id = $3, last_outcome = 'triggered', last_error = NULL, updated_at = $4 WHERE workflow_name = $1 AND name = $2`,
    [workflow, name, runId, now],
  );
}

export async function setSchedulePaused(q: Queryable, s: string, workflow: string, name: string, paused: boolean, now: Date): Promise<ScheduleRow | undefined> {
  const { rows } = await q.query<ScheduleRow>(
    `UPDATE ${s}.schedules SET paused = $3, updated_at = $4 WHERE workflow_name = $1 AND name = $2 RETURNING ${COLUMNS}`,
    [workflow, name, paused, now],
  );
  return rows[0];
}

/** Unpauses a schedule: it ticks from `now` (the ticks it missed while paused never run), with no tick buffered. */
export async function resumeSchedule(
  q: Queryable,
  s: string,
  workflow: string,
  name: string,
  now: Date,
  nextTick: Date | null,
  nextFireAt: Date | null,
): Promise<ScheduleRow | undefined> {
  const { rows } = await q.query<ScheduleRow>(
    `UPDATE ${s}.schedules SET paused = false, since = greatest(since, $3), next_tick = $4, next_fire_at = $5, buffered_tick = NULL, updated_at = $3
     WHERE workflow_name = $1 AND name = $2 RETURNING ${COLUMNS}`,
    [workflow, name, now, nextTick, nextFireAt],
  );
  return rows[0];
}

/** A schedule's runs that are still running (a cancelled one runs until its handlers stop), oldest first. */
export async function runningRuns(q: Queryable, s: string, workflow: string, schedule: string): Promise<{ id: string; cancel_requested: boolean }[]> {
  const { rows } = await q.query<{ id: string; cancel_requested: boolean }>(
    `SELECT id, cancel_requested FROM ${s}.workflows WHERE name = $1 AND schedule = $2 AND state = 'running' ORDER BY created_at, id`,
    [workflow, schedule],
  );
  return rows;
}

export interface ScheduleRun {
  id: string;
  state: string;
  created_at: Date;
  finalized_at: Date | null;
}

/** The latest runs of each schedule given, newest first, in one statement (an index range per schedule), keyed WORKFLOW\u0000SCHEDULE. */
export async function recentRuns(
  q: Queryable,
  s: string,
  schedules: readonly { workflow: string; name: string }[],
  limit: number,
): Promise<Map<string, ScheduleRun[]>> {
  const { rows } = await q.query<ScheduleRun & { w: string; n: string }>(
    `SELECT k.w, k.n, r.id, r.state, r.created_at, r.finalized_at FROM unnest($1::text[], $2::text[]) AS k(w, n)
      CROSS JOIN LATERAL (SELECT id, state, created_at, finalized_at FROM ${s}.workflows
                           WHERE name = k.w AND schedule = k.n ORDER BY created_at DESC, id DESC LIMIT $3) r`,
    [schedules.map((x) => x.workflow), schedules.map((x) => x.name), limit],
  );
  const out = new Map<string, ScheduleRun[]>();
  for (const { w, n, ...run } of rows) out.set(`${w}\u0000${n}`, [...(out.get(`${w}\u0000${n}`) ?? []), run]);
  return out;
}
