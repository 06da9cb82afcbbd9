/** Schedules as the API serves them (wire/index.ts exports these with the rest). */
import type { WorkflowRecord, WorkflowState } from './records.js';

/** A schedule as the API serves it: its clock, its state, its next ticks and its latest runs. */
export interface ScheduleRecord {
  workflow: string;
  name: string;
  description?: string;
  cron?: string;
  every_ms?: number;
  timezone: string;
  overlap: 'skip' | 'buffer_one' | 'allow' | 'cancel_previous';
  catchup_ms: number;
  jitter_ms: number;
  dst: { repeated: 'first' | 'both'; skipped: 'shift' | 'skip' };
  start_at?: string;
  end_at?: string;
  paused: boolean;
  definition_hash: string;
  /** The nominal time of the last tick handled (UTC ISO), and what it did: started, existing, skipped, buffered, failed. */
  last_tick: string | null;
  last_outcome: string | null;
  last_error: string | null;
  last_run_id: string | null;
  /** How long after its fire time (jitter included) the last tick started, in ms: a leader that cannot keep up shows here. */
  last_lag_ms: number | null;
  /** Ticks the leader passed over while it was behind (out of the catch-up window: they never run), and when the last was. */
  missed_ticks: number;
  missed_at: string | null;
  /** A tick waiting for the running run to end (overlap buffer_one). */
  buffered_tick: string | null;
  /** The next nominal ticks: UTC, the schedule's local time (ISO with offset), and when it starts (with jitter). */
  next_ticks: { time: string; local: string; fire_at: string }[];
  /** The latest runs, newest first. */
  recent_runs: { id: string; state: WorkflowState; created_at: Date; finalized_at: Date | null }[];
}

/** What a trigger or a backfill did, tick by tick: the run's id, and whether it started now or was there already. */
export interface ScheduleStart {
  time: string;
  id: string;
  status: 'started' | 'existing' | 'failed' | 'would_start';
  error?: string;
}

/** The tick a schedule's run was started for: its key is NAME:SCHEDULE:TICK (null for a run no schedule started). */
export function scheduledTick(w: Pick<WorkflowRecord, 'id' | 'name' | 'schedule'>): string | null {
  return w.schedule === null ? null : w.id.slice(w.name.length + w.schedule.length + 2);
}
