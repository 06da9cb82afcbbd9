import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { instantsOf, offsetAt, wallOf } from './zone.js';

/** When a schedule ticks: what the definition says about its clock, normalised. */
export interface ScheduleTiming {
  cron?: string;
  every_ms?: number;
  timezone: string;
  dst: DstPolicy;
  /** RFC 3339: no tick before it (inclusive). */
  start_at?: string;
  /** RFC 3339: no tick at or after it. */
  end_at?: string;
}

export interface DstPolicy {
  /** A wall time the clocks pass twice (they go back): run at the first only, or at both. */
  repeated: 'first' | 'both';
  /** A wall time the clocks jump over (they go forward): run when they land, or not at all that day. */
  skipped: 'shift' | 'skip';
}

export const DEFAULT_DST: DstPolicy = { repeated: 'first', skipped: 'shift' };

const crons = new Map<string, Cron>();

/**
 * The cron arithmetic itself (croner), on wall times: 5 fields, or 6 with seconds, or a macro. Parsed once per
 * pattern (a Cron without a function schedules nothing; its next and previous runs are pure).
 */
export function cronOf(pattern: string): Cron {
  let cron = crons.get(pattern);
  if (!cron) {
    // wall times are read as UTC: an offset of 0, not the zone UTC, which costs croner an Intl reading per step
    cron = new Cron(pattern, { utcOffset: 0, mode: '5-or-6-parts' });
    if (crons.size >= 10_000) crons.clear();
    crons.set(pattern, cron);
  }
  return cron;
}

const MAX_STEPS = 1_000_000;

/**
 * A schedule's nominal ticks strictly after an instant, in order, each once, to `end_at` (or for ever: the
 * caller stops taking). Cron wall times are mapped to instants by the DST policy; `every` counts whole
 * intervals from `start_at` (or the Unix epoch), in real time, where the clocks' changes do not matter.
 */
export function* ticksAfter(timing: ScheduleTiming, after: number): Generator<number> {
  const start = timing.start_at ? Date.parse(timing.start_at) : undefined;
  const end = timing.end_at ? Date.parse(timing.end_at) : Number.POSITIVE_INFINITY;
  const from = start !== undefined ? Math.max(after, start - 1) : after;
  for (const t of timing.every_ms ? everyTicks(timing.every_ms, start ?? 0, from) : cronTicks(timing, from)) {
    if (t >= end) return;
    yield t;
  }
}

function* everyTicks(every: number, anchor: number, after: number): Generator<number> {
  let k = Math.max(0, Math.floor((after - anchor) / every) + 1);
  for (;;) yield anchor + k++ * every;
}

/**
 * Walks the cron's wall times and maps each to its instants. Those come out of order only around a change of
 * the clocks (the second 02:30 of a night the clocks go back falls after the first 02:45), so an instant is
 * held until no later wall time can map before it: until it is earlier than the cursor read with the largest
 * offset the zone has near it.
 */
function* cronTicks(timing: ScheduleTiming, after: number): Generator<number> {
  const cron = cronOf(timing.cron ?? '');
  const zone = timing.timezone;
  const pending: number[] = [];
  let last = after;
  // a wall time before the zone's reading of `after` maps after it only when the clocks went back over it
  let cursor = wallOf(zone, after) - offsetSpreadNear(zone, after) - 1;
  for (let step = 0; step < MAX_STEPS; step++) {
    const next = cron.nextRun(new Date(cursor));
    if (!next) break;
    cursor = next.getTime();
    for (const t of instantsFor(zone, cursor, timing.dst)) if (t > last && !pending.includes(t)) insertSorted(pending, t);
    const floor = cursor - largestOffsetNear(zone, cursor);
    while (pending.length > 0 && pending[0] < floor) {
      const t = pending.shift()!;
      if (t > last) yield (last = t);
    }
  }
  for (const t of pending) if (t > last) yield (last = t);
}

function insertSorted(list: number[], t: number): void {
  let i = list.length;
  while (i > 0 && list[i - 1] > t) i--;
  list.splice(i, 0, t);
}

/** The zone's offsets two days either side of an instant and at it: probed on the hour, so nearby instants share them. */
function offsetsNear(zone: string, t: number): number[] {
  const hour = Math.floor(t / 3_600_000) * 3_600_000;
  return [hour - 2 * DAY, hour, hour + 2 * DAY + 3_600_000].map((x) => offsetAt(zone, x));
}

function largestOffsetNear(zone: string, wall: number): number {
  return Math.max(...offsetsNear(zone, wall));
}

function offsetSpreadNear(zone: string, t: number): number {
  const near = offsetsNear(zone, t);
  return Math.max(...near) - Math.min(...near);
}

const DAY = 86_400_000;

/** The instants one wall time runs at, under the DST policy. */
function instantsFor(zone: string, wall: number, dst: DstPolicy): number[] {
  const { instants, gapEnd } = instantsOf(zone, wall);
  if (instants.length === 0) return dst.skipped === 'shift' && gapEnd !== undefined ? [gapEnd] : [];
  return dst.repeated === 'both' ? instants : instants.slice(0, 1);
}

/** Up to `count` nominal ticks after an instant. */
export function nextTicks(timing: ScheduleTiming, after: number, count: number): number[] {
  const out: number[] = [];
  if (count <= 0) return out;
  for (const t of ticksAfter(timing, after)) {
    out.push(t);
    if (out.length >= count) break;
  }
  return out;
}

/** The nominal ticks in (from, to], oldest first, at most `max` of them (the newest are cut when there are more). */
export function ticksBetween(timing: ScheduleTiming, from: number, to: number, max: number): { ticks: number[]; more: boolean } {
  const ticks: number[] = [];
  for (const t of ticksAfter(timing, from)) {
    if (t > to) return { ticks, more: false };
    if (ticks.length >= max) return { ticks, more: true };
    ticks.push(t);
  }
  return { ticks, more: false };
}

/**
 * The latest nominal tick at or before an instant, after `after` (undefined when none). A cron's wall times are
 * walked backwards (croner's previousRuns) from the zone's reading of the instant, a few at a time, until none
 * earlier could map past the best found: a long downtime costs the same as a short one.
 */
export function latestTickBetween(timing: ScheduleTiming, after: number, atOrBefore: number): number | undefined {
  const start = timing.start_at ? Date.parse(timing.start_at) : Number.NEGATIVE_INFINITY;
  const end = timing.end_at ? Date.parse(timing.end_at) : Number.POSITIVE_INFINITY;
  const lower = Math.max(after, start - 1);
  const upper = Math.min(atOrBefore, end - 1);
  if (upper <= lower) return undefined;
  if (timing.every_ms) {
    const anchor = timing.start_at ? start : 0;
    if (upper < anchor) return undefined;
    const t = anchor + Math.floor((upper - anchor) / timing.every_ms) * timing.every_ms;
    return t > lower ? t : undefined;
  }
  const cron = cronOf(timing.cron ?? '');
  const zone = timing.timezone;
  const near = offsetsNear(zone, upper);
  const [least, most] = [Math.min(...near), Math.max(...near)];
  let best: number | undefined;
  // one past the latest wall time that can map to `upper` or before (previousRuns counts from before its reference)
  let reference = upper + most + 1;
  for (let round = 0; round < 10_000; round++) {
    const walls = cron.previousRuns(4, new Date(reference)).map((d) => d.getTime());
    for (const wall of walls) for (const t of instantsFor(zone, wall, timing.dst)) if (t <= upper && t > lower && (best === undefined || t > best)) best = t;
    const earliest = walls[walls.length - 1];
    // earlier wall times map no later than this, read with the smallest offset near
    if (walls.length < 4 || earliest - least <= (best ?? lower)) return best;
    reference = earliest;
  }
  return best;
}

const intervals = new Map<string, number | undefined>();

/**
 * The shortest gap between consecutive ticks among the first hundred of a reference year (for "a jitter longer
 * than the interval"), kept per clock: a project with thousands of schedules on a few cron lines works it out once each.
 */
export function shortestInterval(timing: ScheduleTiming): number | undefined {
  if (timing.every_ms) return timing.every_ms;
  const key = JSON.stringify([timing.cron, timing.timezone, timing.dst]);
  if (intervals.has(key)) return intervals.get(key);
  let shortest: number | undefined;
  let previous: number | undefined;
  let n = 0;
  for (const t of ticksAfter({ ...timing, start_at: undefined, end_at: undefined }, Date.UTC(2027, 0, 1))) {
    if (previous !== undefined) shortest = Math.min(shortest ?? Number.POSITIVE_INFINITY, t - previous);
    previous = t;
    if (++n > 100 || t > Date.UTC(2028, 0, 1)) break;
  }
  if (intervals.size >= 10_000) intervals.clear();
  intervals.set(key, shortest);
  return shortest;
}

/**
 * A schedule's own offset from its nominal ticks, the same on every machine and every run: so schedules that
 * share a cron line spread over the jitter window instead of all starting in the same millisecond.
 */
export function jitterOffset(workflow: string, schedule: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  const h = createHash('sha256').update(`${workflow}\u0000${schedule}`).digest();
  return h.readUIntBE(0, 6) % jitterMs;
}

/** A tick's nominal time as written in its business key and shown: ISO 8601 UTC, milliseconds only when it has some. */
export function tickIso(t: number): string {
  return new Date(t).toISOString().replace('.000Z', 'Z');
}

/** The business key of a tick's run: `NAME:SCHEDULE:NOMINAL_ISO`, so no tick can ever start twice. */
export function tickRunId(workflow: string, schedule: string, t: number): string {
  return `${workflow}:${schedule}:${tickIso(t)}`;
}
