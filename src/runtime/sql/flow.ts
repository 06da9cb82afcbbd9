import type { PlanFlow } from '../../compiler/flow.js';
import type { Queryable } from '../db/types.js';

/** What the keys of some waiting tasks hold now: attempts in flight, runs holding a slot, recent starts. */
export interface FlowHoldings {
  /** Per concurrency key, its attempts in flight. */
  running: Map<string, number>;
  /** Per workflow-concurrency key, the runs with a task in flight. */
  runs: Map<string, string[]>;
  /** Per rate key, its latest starts. */
  starts: Map<string, Date[]>;
}

/** Reads what the keys of the given flows hold (one statement; each key through its index). */
export async function flowHoldings(q: Queryable, s: string, flows: readonly PlanFlow[]): Promise<FlowHoldings> {
  const keys = (pick: (f: PlanFlow) => string | undefined) => [...new Set(flows.map(pick).filter((k): k is string => k !== undefined))];
  const { rows } = await q.query<{ running: Record<string, number> | null; runs: Record<string, string[]> | null; starts: Record<string, string[]> | null }>(
    `SELECT (SELECT json_object_agg(k, (SELECT count(*) FROM ${s}.tasks WHERE flow_slot = k)) FROM unnest($1::text[]) AS k) AS running,
            (SELECT json_object_agg(k, (SELECT coalesce(json_agg(DISTINCT workflow_id), '[]') FROM ${s}.tasks WHERE flow_run_slot = k))
               FROM unnest($2::text[]) AS k) AS runs,
            (SELECT json_object_agg(key, starts) FROM ${s}.flow_rates WHERE key = ANY($3::text[])) AS starts`,
    [keys((f) => f.concurrency?.key), keys((f) => f.workflow_concurrency?.key), keys((f) => f.rate_limit?.key)],
  );
  const r = rows[0];
  return {
    running: new Map(Object.entries(r?.running ?? {}).map(([k, n]) => [k, Number(n)])),
    runs: new Map(Object.entries(r?.runs ?? {})),
    starts: new Map(Object.entries(r?.starts ?? {}).map(([k, list]) => [k, list.map((t) => new Date(t))])),
  };
}

/** Gives up to `limit` of a queue's waiting tasks with flow control their place in its fair order (migration 022's flow_tag_waiting). */
export async function placeWaiting(q: Queryable, s: string, queue: string, limit = 5000): Promise<void> {
  await q.query(`SELECT ${s}.flow_tag_waiting($1, $2)`, [queue, limit]);
}

/**
 * Gives parked tasks their place back where their key has room: the keys of frees whose unpark a claim's lock
 * held off, and with `every`, every key a task is parked on (a move, or limits that differ between a key's
 * tasks, can leave one parked with room). A key another transaction holds is kept for the next pass. Returns
 * how many tasks were unparked.
 */
export async function unparkMissed(q: Queryable, s: string, every: boolean): Promise<number> {
  const { rows } = await q.query<{ n: string | null }>(
    `WITH missed AS (
       DELETE FROM ${s}.flow_missed_frees RETURNING key
     ), keys AS (
       SELECT key FROM missed
       UNION SELECT DISTINCT flow_parked FROM ${s}.tasks WHERE $1 AND lane = 'flow' AND flow_parked IS NOT NULL
     ), tried AS MATERIALIZED (
       SELECT k.key, u.n FROM (SELECT key FROM keys ORDER BY key) k CROSS JOIN LATERAL (SELECT ${s}.flow_unpark(k.key) AS n) u
     ), kept AS (
       INSERT INTO ${s}.flow_missed_frees (key) SELECT key FROM tried WHERE n < 0
     )
     SELECT sum(n) FILTER (WHERE n > 0) AS n FROM tried`,
    [every],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Drops the flow bookkeeping that limits nothing any more: rate keys whose window has passed, and fair-order
 * turns at or behind their queue's head (a turn back from idle would start at the head anyway); a queue's head
 * is kept in flow_queues. Returns the rows dropped.
 */
export async function pruneFlowBookkeeping(q: Queryable, s: string, now: Date): Promise<number> {
  const { rows } = await q.query<{ rates: number; turns: number }>(
    `WITH rates AS (
       DELETE FROM ${s}.flow_rates WHERE expires_at < $1 RETURNING 1
     ), heads AS MATERIALIZED (
       SELECT q.queue,
              coalesce((SELECT min(t.flow_tag) FROM ${s}.tasks t
                         WHERE t.lane = 'flow' AND t.flow_parked IS NULL AND t.queue = q.queue AND t.flow_tag IS NOT NULL),
                       q.last) AS head
         FROM (SELECT queue, max(last_tag) AS last FROM ${s}.flow_turns GROUP BY queue) q
     ), kept AS (
       INSERT INTO ${s}.flow_queues AS f (queue, head) SELECT queue, head FROM heads ORDER BY queue
       ON CONFLICT (queue) DO UPDATE SET head = greatest(f.head, excluded.head)
     ), turns AS (
       DELETE FROM ${s}.flow_turns ft USING heads h WHERE ft.queue = h.queue AND ft.last_tag <= h.head RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM rates) AS rates, (SELECT count(*)::int FROM turns) AS turns`,
    [now],
  );
  return (rows[0]?.rates ?? 0) + (rows[0]?.turns ?? 0);
}
