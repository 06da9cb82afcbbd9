import type { Queryable } from '../db/types.js';

/** Per queue: the tasks available now, and how long the oldest of them has been due (seconds). */
export async function queueDepths(q: Queryable, s: string): Promise<{ queue: string; depth: number; oldest_age_s: number }[]> {
  const { rows } = await q.query<{ queue: string; depth: number; oldest_age_s: number }>(
    `SELECT queue, count(*)::int AS depth, extract(epoch FROM now() - min(scheduled_at))::float8 AS oldest_age_s
       FROM ${s}.tasks WHERE lane IN ('available', 'flow') GROUP BY queue`,
  );
  return rows;
}

/** How many workflows there are of each name in each state. */
export async function workflowCounts(q: Queryable, s: string): Promise<{ name: string; state: string; n: number }[]> {
  const { rows } = await q.query<{ name: string; state: string; n: number }>(`SELECT name, state, count(*)::int AS n FROM ${s}.workflows GROUP BY name, state`);
  return rows;
}
