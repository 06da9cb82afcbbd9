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
