/**
 * Wall-clock time in an IANA time zone, through the platform's Intl data. A wall time is written as the
 * milliseconds of that date and time read as if it were UTC, so the cron arithmetic can run on it untouched
 * by daylight saving and the zone's rules are applied in one place: here.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether the platform knows the zone (an IANA name such as Europe/Berlin, or UTC). */
export function isTimeZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** Every zone name the platform knows, for a did-you-mean. */
export function timeZones(): string[] {
  return [...Intl.supportedValuesOf('timeZone'), 'UTC'];
}

/** The zone's wall time at an instant. */
export function wallOf(zone: string, instant: number): number {
  return instant + offsetAt(zone, instant);
}

const MINUTE = 60_000;
const HOUR_MS = 3_600_000;
const offsets = new Map<string, number>();

/** The zone's offset at a whole minute, read from the platform (kept, the cache dropped when it grows). */
function offsetAtMinute(zone: string, minute: number): number {
  const key = `${zone}@${minute}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const parts: Record<string, number> = {};
    for (const p of formatter(zone).formatToParts(new Date(minute))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
    offset = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second) - minute;
    if (offsets.size >= 50_000) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

/**
 * The zone's offset from UTC at an instant. Zones change their offsets on whole minutes, at most once an hour:
 * an hour whose two ends read the same offset has it throughout (two readings, kept); only an hour with a change
 * in it is read minute by minute.
 */
export function offsetAt(zone: string, instant: number): number {
  if (zone === 'UTC') return 0;
  const hour = Math.floor(instant / HOUR_MS) * HOUR_MS;
  const start = offsetAtMinute(zone, hour);
  if (offsetAtMinute(zone, hour + HOUR_MS) === start) return start;
  return offsetAtMinute(zone, Math.floor(instant / MINUTE) * MINUTE);
}

const HOUR = 3_600_000;

/**
 * The instants at which the zone's clocks show a wall time: one on most days; two, in order, when the clocks
 * go back and the time happens twice; none when the clocks go forward over it — and then `gapEnd`, the instant
 * the clocks jump at, the first time after the gap.
 */
export function instantsOf(zone: string, wall: number): { instants: number[]; gapEnd?: number } {
  // the zone's offsets on either side of any change near this time (zones have moved by up to a day)
  const offsets = new Set([wall - 48 * HOUR, wall, wall + 48 * HOUR].map((t) => wallOf(zone, t) - t));
  const instants = [...new Set([...offsets].map((o) => wall - o))].filter((t) => wallOf(zone, t) === wall).sort((a, b) => a - b);
  if (instants.length > 0) return { instants };
  // in a gap: the clocks jump between the instant read with the larger offset and the one with the smaller
  const sorted = [...offsets].sort((a, b) => a - b);
  let lo = wall - sorted[sorted.length - 1];
  let hi = wall - sorted[0];
  for (let i = 0; i < 64 && hi - lo > 1; i++) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallOf(zone, mid) > wall) hi = mid;
    else lo = mid;
  }
  return { instants: [], gapEnd: hi };
}

/** An instant as the zone's clocks show it, in ISO 8601 with the offset: 2027-03-28T03:00:00+02:00. */
export function localIso(zone: string, instant: number): string {
  const offset = offsetAt(zone, instant);
  const wall = new Date(instant + offset).toISOString().slice(0, 19);
  const ms = instant % 1000 === 0 ? '' : `.${String(((instant % 1000) + 1000) % 1000).padStart(3, '0')}`;
  if (offset === 0) return `${wall}${ms}Z`;
  const minutes = Math.abs(offset) / 60_000;
  return `${wall}${ms}${offset < 0 ? '-' : '+'}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}
