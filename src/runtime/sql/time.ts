import type { Queryable } from '../db/types.js';

/** Where "now" comes from: the database's clock by default, injectable for tests. */
export type Clock = (() => Date) | undefined;

/** The current time for one transaction: one clock for every comparison in it. */
export async function currentTime(q: Queryable, clock: Clock): Promise<Date> {
  if (clock) return clock();
  const { rows } = await q.query<{ now: Date }>('SELECT now() AS now');
  return new Date(rows[0].now);
}
