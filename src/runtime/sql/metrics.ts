import type { Queryable } from '../db/types.js';

/**
 * Per queue: the tasks available now, and how long the oldest of them has been due (seconds). An available range
 * counts its items without expanding them (a scrape reads one row per range).
 */
export async function queueDepths(q: Queryable, s: string): Promise<{ queue: string; depth: number; oldest_age_s: number }[]> {
  const { rows } = await q.query<{ queue: string; depth: number; oldest_age_s: number }>(
    `SELECT queue, sum(n)::int AS depth, extract(epoch FROM now() - min(due))::float8 AS oldest_age_s
       FROM (SELECT queue, 1 AS n, scheduled_at AS due FROM ${s}.tasks WHERE lane IN ('available', 'flow')
             UNION ALL
             SELECT queue, hi - lo, scheduled_at FROM ${s}.task_ranges WHERE state = 'available') x
      GROUP BY queue`,
  );
  return rows;
}

/** Up to this many workflows (as the statistics last counted them) a scrape counts them all. */
const EXACT_COUNTS_BELOW = 100_000;

/**
 * How many workflows there are of each name in each state: running ones counted (their partial index), the
 * finished ones too while the table is small; past `exactBelow` rows, finished ones are estimated from the
 * statistics over (name, state) that ANALYZE keeps (migration 026), so a scrape never reads every row.
 */
export async function workflowCounts(q: Queryable, s: string, exactBelow = EXACT_COUNTS_BELOW): Promise<{ name: string; state: string; n: number }[]> {
  const { rows: size } = await q.query<{ reltuples: number }>(`SELECT reltuples::float8 AS reltuples FROM pg_class WHERE oid = '${s}.workflows'::regclass`);
  const rows = size[0]?.reltuples ?? -1;
  if (rows < exactBelow) {
    const exact = await q.query<{ name: string; state: string; n: number }>(`SELECT name, state, count(*)::int AS n FROM ${s}.workflows GROUP BY name, state`);
    return exact.rows;
  }
  const [running, finished] = await Promise.all([
    q.query<{ name: string; state: string; n: number }>(
      `SELECT name, 'running' AS state, count(*)::int AS n FROM ${s}.workflows WHERE state = 'running' GROUP BY name`,
    ),
    q.query<{ name: string; state: string; n: number }>(
      `SELECT e.most_common_vals[i][1] AS name, e.most_common_vals[i][2] AS state, round(e.most_common_freqs[i] * c.reltuples)::int AS n
         FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
         JOIN pg_stats_ext e ON e.statistics_schemaname = ns.nspname AND e.statistics_name = 'workflows_name_state'
         CROSS JOIN LATERAL generate_subscripts(e.most_common_freqs, 1) AS i
        WHERE c.oid = '${s}.workflows'::regclass AND e.most_common_vals[i][2] <> 'running'`,
    ),
  ]);
  return [...running.rows, ...finished.rows];
}

/** How many pauses are in force per scope (every scope, 0 when none). */
export async function pauseCounts(q: Queryable, s: string): Promise<{ scope: string; n: number }[]> {
  const { rows } = await q.query<{ scope: string; n: number }>(
    `SELECT x.scope, count(p.target)::int AS n FROM unnest(ARRAY['queue', 'kind', 'workflow']) AS x(scope)
       LEFT JOIN ${s}.pauses p ON p.scope = x.scope GROUP BY x.scope ORDER BY x.scope`,
  );
  return rows;
}

/** Schedules' ticks missed in all (passed over by a late leader) and the largest lag of a last tick, over unpaused schedules. */
export async function scheduleLateness(q: Queryable, s: string): Promise<{ missed: number; lag_s: number }> {
  const { rows } = await q.query<{ missed: number; lag_s: number }>(
    `SELECT coalesce(sum(missed_ticks), 0)::float8 AS missed, coalesce(max(last_lag_ms), 0)::float8 / 1000 AS lag_s FROM ${s}.schedules WHERE NOT paused`,
  );
  return rows[0] ?? { missed: 0, lag_s: 0 };
}
