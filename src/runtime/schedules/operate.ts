import { jitterOffset, nextTicks, tickIso, tickRunId, ticksBetween } from '../../compiler/schedule/ticks.js';
import { localIso } from '../../compiler/schedule/zone.js';
import { type Acting, type ActorOptions, actorOf } from '../core/actor.js';
import { advancing, clockNow, type RuntimeContext } from '../core/context.js';
import type { Queryable } from '../db/types.js';
import { BackfillRangeError, ScheduleNotFoundError } from '../errors.js';
import { writeAudit } from '../sql/audit.js';
import {
  lockSchedule,
  readSchedules,
  recentRuns,
  recordTrigger,
  resumeSchedule,
  type ScheduleRow,
  type ScheduleRun,
  setSchedulePaused,
} from '../sql/schedules.js';
import type { ScheduleRecord, ScheduleStart } from '../wire/index.js';
import { tickAfter } from './decide.js';
import { startTick } from './fire.js';

/** The most ticks one backfill starts: a longer range is refused (split it). */
export const BACKFILL_MAX = 10_000;

/**
 * Schedules as an operator sees them (`braid schedules`, `braid schedule ...`, the API and the UI): read with
 * their next ticks and latest runs; paused and resumed; a tick now; every tick of a range.
 */
export class Schedules {
  constructor(private readonly ctx: RuntimeContext) {}

  /** Every schedule (of one workflow, when named), with its next `next` ticks and latest `runs` runs. */
  async list(workflow?: string, o: { next?: number; runs?: number } = {}): Promise<ScheduleRecord[]> {
    const rows = await readSchedules(this.ctx.db, this.ctx.s, workflow);
    const now = (await clockNow(this.ctx)).getTime();
    const runs = await recentRuns(
      this.ctx.db,
      this.ctx.s,
      rows.map((r) => ({ workflow: r.workflow_name, name: r.name })),
      o.runs ?? 10,
    );
    return rows.map((row) => this.record(row, now, o.next ?? 5, runs.get(`${row.workflow_name}\u0000${row.name}`) ?? []));
  }

  /** One schedule; a ScheduleNotFoundError when the workflow's current version has no such schedule. */
  async get(workflow: string, name: string, o: { next?: number; runs?: number } = {}): Promise<ScheduleRecord> {
    const found = (await this.list(workflow, o)).find((r) => r.name === name);
    if (!found) throw await this.notFound(workflow, name);
    return found;
  }

  /** Stops a schedule ticking until it is resumed (or a version changes its `paused`). */
  async pause(workflow: string, name: string, o: ActorOptions = {}): Promise<ScheduleRecord> {
    const who = actorOf(o);
    const row = await advancing(this.ctx, async (tx, advance) => {
      const paused = await setSchedulePaused(tx, advance.s, workflow, name, true, advance.now);
      if (paused) await this.audit(tx, advance.now, 'pause', workflow, name, who);
      return paused;
    });
    if (!row) throw await this.notFound(workflow, name);
    return this.withRuns(row, (await clockNow(this.ctx)).getTime());
  }

  /** The audit line of an operator's action on a schedule (a started run named as its workflow). */
  private audit(
    tx: Queryable,
    now: Date,
    action: string,
    workflow: string,
    name: string,
    who: Acting,
    run?: string,
    detail?: Record<string, unknown>,
  ): Promise<void> {
    return writeAudit(tx, this.ctx.s, now, [
      { action: `schedule.${action}`, target: `${workflow}/${name}`, ...who, ...(run ? { workflow_id: run } : {}), ...(detail ? { detail } : {}) },
    ]);
  }

  /** Ticks again from now: the ticks it missed while paused do not run. */
  async resume(workflow: string, name: string, o: ActorOptions = {}): Promise<ScheduleRecord> {
    const who = actorOf(o);
    const row = await advancing(this.ctx, async (tx, advance) => {
      const locked = await lockSchedule(tx, advance.s, workflow, name, true);
      if (!locked) return undefined;
      if (!locked.paused) return locked;
      await this.audit(tx, advance.now, 'resume', workflow, name, who);
      const now = advance.now.getTime();
      const next = tickAfter(locked.spec, Math.max(now, locked.last_tick ? new Date(locked.last_tick).getTime() : now));
      const fireAt = next === undefined ? null : new Date(next + jitterOffset(workflow, name, locked.spec.jitter_ms));
      return resumeSchedule(tx, advance.s, workflow, name, advance.now, next === undefined ? null : new Date(next), fireAt);
    });
    if (!row) throw await this.notFound(workflow, name);
    return this.withRuns(row, (await clockNow(this.ctx)).getTime());
  }

  /** A tick now, outside the clock (paused or not, whatever runs): its run has its own key, of this instant. */
  async trigger(workflow: string, name: string, o: ActorOptions = {}): Promise<ScheduleStart> {
    const who = actorOf(o);
    const started = await advancing(this.ctx, async (tx, advance) => {
      const row = await lockSchedule(tx, advance.s, workflow, name, true);
      if (!row) return undefined;
      const t = advance.now.getTime();
      const run = await startTick(tx, advance, row, t);
      const runId = run.runId ?? tickRunId(workflow, name, t);
      await recordTrigger(tx, advance.s, workflow, name, runId, advance.now);
      await this.audit(tx, advance.now, 'trigger', workflow, name, who, runId);
      return { t, run };
    });
    // said after the transaction: the embedded database has one connection, which the transaction holds
    if (!started) throw await this.notFound(workflow, name);
    const { t, run } = started;
    return { time: tickIso(t), id: run.runId ?? tickRunId(workflow, name, t), ...startStatus(run) };
  }

  /**
   * Every nominal tick from `from` to `to` (both included) started, each in its own transaction with its
   * tick's business key: a second backfill of the same range finds them all and starts nothing.
   */
  async backfill(workflow: string, name: string, from: Date, to: Date, o: ActorOptions & { dryRun?: boolean } = {}): Promise<ScheduleStart[]> {
    const who = actorOf(o);
    if (!(to.getTime() >= from.getTime())) throw new BackfillRangeError('the backfill range ends before it begins');
    const [row] = (await readSchedules(this.ctx.db, this.ctx.s, workflow)).filter((r) => r.name === name);
    if (!row) throw await this.notFound(workflow, name);
    const { ticks, more } = ticksBetween(row.spec, from.getTime() - 1, to.getTime(), BACKFILL_MAX);
    if (more) throw new BackfillRangeError(`the range holds more than ${BACKFILL_MAX.toLocaleString('en-US')} ticks: backfill it in parts`);
    const out: ScheduleStart[] = [];
    for (const t of ticks) {
      const id = tickRunId(workflow, name, t);
      if (o.dryRun) {
        out.push({ time: tickIso(t), id, status: 'would_start' });
        continue;
      }
      const run = await advancing(this.ctx, async (tx, advance) => {
        const r = await startTick(tx, advance, row, t);
        if (r.outcome !== 'existing' && !r.error) await this.audit(tx, advance.now, 'backfill', workflow, name, who, id, { tick: tickIso(t) });
        return r;
      });
      out.push({ time: tickIso(t), id, ...startStatus(run) });
    }
    return out;
  }

  /** One schedule's record with its latest runs (read for it alone). */
  private async withRuns(row: ScheduleRow, now: number): Promise<ScheduleRecord> {
    const runs = await recentRuns(this.ctx.db, this.ctx.s, [{ workflow: row.workflow_name, name: row.name }], 10);
    return this.record(row, now, 5, runs.get(`${row.workflow_name}\u0000${row.name}`) ?? []);
  }

  private record(row: ScheduleRow, now: number, next: number, runs: ScheduleRun[]): ScheduleRecord {
    const spec = row.spec;
    const jitter = jitterOffset(row.workflow_name, row.name, spec.jitter_ms);
    const from = row.next_tick ? new Date(row.next_tick).getTime() - 1 : now;
    const iso = (d: Date | null) => (d ? tickIso(new Date(d).getTime()) : null);
    return {
      workflow: row.workflow_name,
      name: row.name,
      ...(spec.description !== undefined ? { description: spec.description } : {}),
      ...(spec.cron !== undefined ? { cron: spec.cron } : { every_ms: spec.every_ms }),
      timezone: spec.timezone,
      overlap: spec.overlap,
      catchup_ms: spec.catchup_ms,
      jitter_ms: spec.jitter_ms,
      dst: spec.dst,
      ...(spec.start_at !== undefined ? { start_at: spec.start_at } : {}),
      ...(spec.end_at !== undefined ? { end_at: spec.end_at } : {}),
      paused: row.paused,
      definition_hash: row.definition_hash,
      last_tick: iso(row.last_tick),
      last_outcome: row.last_outcome,
      last_error: row.last_error,
      last_lag_ms: row.last_lag_ms === null ? null : Number(row.last_lag_ms),
      missed_ticks: Number(row.missed_ticks),
      missed_at: iso(row.missed_at),
      last_run_id: row.last_run_id,
      buffered_tick: iso(row.buffered_tick),
      next_ticks: nextTicks(spec, from, Math.min(Math.max(next, 0), 1000)).map((t) => ({
        time: tickIso(t),
        local: localIso(spec.timezone, t),
        fire_at: tickIso(t + jitter),
      })),
      recent_runs: runs as ScheduleRecord['recent_runs'],
    };
  }

  private async notFound(workflow: string, name: string): Promise<ScheduleNotFoundError> {
    const known = (await readSchedules(this.ctx.db, this.ctx.s, workflow)).map((r) => r.name);
    return new ScheduleNotFoundError(workflow, name, known);
  }
}

function startStatus(run: { outcome: string; error?: string }): Pick<ScheduleStart, 'status' | 'error'> {
  if (run.error) return { status: 'failed', error: run.error };
  return { status: run.outcome === 'existing' ? 'existing' : 'started' };
}
