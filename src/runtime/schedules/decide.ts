import type { NormalizedSchedule } from '../../compiler/normalize.js';
import { latestTickBetween, ticksAfter } from '../../compiler/schedule/ticks.js';

/** The decisions of schedules, without a database: which tick is due, what overlap does, where a deploy leaves the clock. */

export interface TickState {
  /** Ticks up to this never run: when the schedule was deployed (or last resumed). */
  since: number;
  /** The last tick handled (started, skipped or buffered). */
  lastTick: number | null;
}

/**
 * The tick to handle now, if any, and the one after it: a nominal tick fires at its time plus the schedule's
 * jitter offset. Of the ticks missed (after the last one handled), those within `catchup` of now run each in
 * turn, oldest first; when none is, only the latest missed one does. The stored next tick answers the common
 * case (the schedule is on time) with one step of the clock.
 */
export function dueTick(
  spec: NormalizedSchedule,
  jitter: number,
  state: TickState & { nextTick?: number | null },
  now: number,
): { tick: number; next: number | undefined; missed: number } | undefined {
  const horizon = now - jitter;
  const lower = Math.max(state.lastTick ?? Number.NEGATIVE_INFINITY, state.since);
  if (horizon <= lower) return undefined;
  const stored = state.nextTick;
  if (stored !== undefined && stored !== null && stored > lower) {
    // the stored next tick is the first after the last one handled: not yet due, nothing is
    if (stored > horizon) return undefined;
    const next = tickAfter(spec, stored);
    if (next === undefined || next > horizon) return { tick: stored, next, missed: 0 };
  }
  const first = ticksAfter(spec, Math.max(lower, horizon - spec.catchup_ms - 1)).next();
  const tick = !first.done && first.value <= horizon ? first.value : latestTickBetween(spec, lower, horizon);
  return tick === undefined ? undefined : { tick, next: tickAfter(spec, tick), missed: ticksBetween(spec, lower, tick) };
}

/** Counted at most: a schedule missed that many ticks or more (a year of a per-second schedule is no count to walk). */
export const MISSED_COUNT_LIMIT = 100_000;

/**
 * The ticks strictly between `after` (the last one handled, or the schedule's start) and `before`: those a late
 * leader passed over, which never run. Bounded by MISSED_COUNT_LIMIT.
 */
export function ticksBetween(spec: NormalizedSchedule, after: number, before: number): number {
  if (!Number.isFinite(after)) return 0;
  let n = 0;
  for (const t of ticksAfter(spec, after)) {
    if (t >= before || n >= MISSED_COUNT_LIMIT) break;
    n++;
  }
  return n;
}

/** The tick after one (or after an instant), if the schedule has another. */
export function tickAfter(spec: NormalizedSchedule, after: number): number | undefined {
  const next = ticksAfter(spec, after).next();
  return next.done ? undefined : next.value;
}

export type OverlapAction = 'start' | 'skip' | 'buffer' | 'cancel_previous';

/** What a due tick does while runs of its schedule are still running. */
export function overlapAction(policy: NormalizedSchedule['overlap'], running: number, buffered: boolean): OverlapAction {
  if (running === 0 || policy === 'allow') return 'start';
  if (policy === 'skip') return 'skip';
  if (policy === 'buffer_one') return buffered ? 'skip' : 'buffer';
  return 'cancel_previous';
}

/**
 * Where a deploy leaves a schedule: a new one is paused as its definition says and ticks from now; a changed
 * one keeps its history and takes the new clock from its last tick (the new version's schedule replaces the old
 * at the next tick). A pause set by an operator stands unless the new version changes `paused` itself.
 */
export function deployed(
  spec: NormalizedSchedule,
  before: { spec: NormalizedSchedule; paused: boolean; since: number; lastTick: number | null } | undefined,
  now: number,
): { paused: boolean; since: number; nextTick: number | undefined } {
  const paused = before && before.spec.paused === spec.paused ? before.paused : spec.paused;
  const since = before?.since ?? now;
  const from = before?.lastTick ?? Math.max(since, now);
  return { paused, since, nextTick: tickAfter(spec, from) };
}
