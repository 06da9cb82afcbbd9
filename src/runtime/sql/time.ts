import type { Queryable } from '../db/types.js';

/** Where "now" comes from: the database's clock by default, injectable for tests. */
export type Clock = (() => Date) | undefined;

/** How far the database's clock is from this process's, per database, measured now and then. */
const offsets = new WeakMap<Queryable, { offsetMs: number; measuredAt: number; refreshing?: Promise<void> }>();
const REFRESH_MS = 10_000;

async function measure(key: Queryable, via: Queryable): Promise<void> {
  const before = Date.now();
  const { rows } = await via.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  const after = Date.now();
  offsets.set(key, { offsetMs: new Date(rows[0].now).getTime() - (before + after) / 2, measuredAt: after });
}

/**
 * The current time by the one clock every comparison uses: the injected clock when there is one, else the
 * database's, read once and then followed through this process's monotonic time (re-measured every 10 s in
 * the background), so the hot path spends no round trip on it.
 */
export async function currentTime(db: Queryable, clock: Clock, tx?: Queryable): Promise<Date> {
  if (clock) return clock();
  const key = db;
  const known = offsets.get(key);
  if (!known) {
    // inside a transaction, measure through it: the embedded database runs one session at a time
    await measure(key, tx ?? db);
    return new Date(Date.now() + offsets.get(key)!.offsetMs);
  }
  if (Date.now() - known.measuredAt > REFRESH_MS && !known.refreshing) {
    known.refreshing = measure(key, key).catch(() => {
      known.refreshing = undefined;
    });
  }
  return new Date(Date.now() + known.offsetMs);
}
