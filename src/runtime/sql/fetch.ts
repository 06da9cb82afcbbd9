import type { Queryable } from '../db/types.js';
import type { RetryPolicy } from '../decide.js';

export interface FetchedTask {
  workflow_id: string;
  name: string;
  template: string;
  idx: number | null;
  key: string | null;
  kind: string;
  queue: string;
  attempt: number;
  max_attempts: number;
  args: unknown;
  deps: string[];
  timeout_ms: number | null;
  retry: RetryPolicy;
  start: unknown;
  metadata: unknown;
  workflow_attempt: number;
}

/**
 * Claims up to `limit` available tasks of a queue for one worker in one statement: the inner SELECT skips
 * rows other workers hold, so each task attempt runs once at a time.
 */
export async function fetchTasks(q: Queryable, s: string, p: { queue: string; kinds: readonly string[]; limit: number; workerId: string; now: Date }): Promise<FetchedTask[]> {
  const { rows } = await q.query<FetchedTask>(
    `WITH claimed AS (
       UPDATE ${s}.tasks t SET state = 'running', attempt = t.attempt + 1, started_at = $5, worker_id = $4
         FROM (SELECT workflow_id, name FROM ${s}.tasks
                WHERE state = 'available' AND queue = $1 AND kind = ANY($2::text[])
                ORDER BY priority, scheduled_at, id
                LIMIT $3 FOR UPDATE SKIP LOCKED) f
        WHERE t.workflow_id = f.workflow_id AND t.name = f.name
        RETURNING t.workflow_id, t.name, t.template, t.idx, t.key, t.kind, t.queue, t.attempt, t.max_attempts, t.args, t.deps,
                  t.timeout_ms, t.retry, t.start, t.metadata)
     SELECT c.*, w.attempt AS workflow_attempt FROM claimed c JOIN ${s}.workflows w ON w.id = c.workflow_id`,
    [p.queue, p.kinds, p.limit, p.workerId, p.now],
  );
  return rows;
}

/** Direct deps' outputs for a batch of fetched tasks, in one query. */
export async function depOutputs(q: Queryable, s: string, tasks: readonly FetchedTask[]): Promise<Map<string, Record<string, unknown>>> {
  const pairs = tasks.flatMap((t) => t.deps.map((d) => ({ w: t.workflow_id, n: d })));
  const out = new Map<string, Record<string, unknown>>();
  if (pairs.length === 0) return out;
  const { rows } = await q.query<{ workflow_id: string; name: string; output: unknown }>(
    `SELECT t.workflow_id, t.name, t.output FROM ${s}.tasks t
       JOIN jsonb_to_recordset($1::jsonb) AS p(w text, n text) ON t.workflow_id = p.w AND t.name = p.n`,
    [JSON.stringify(pairs)],
  );
  const byKey = new Map(rows.map((r) => [`${r.workflow_id}\u0000${r.name}`, r.output]));
  for (const t of tasks) out.set(`${t.workflow_id}\u0000${t.name}`, Object.fromEntries(t.deps.map((d) => [d, byKey.get(`${t.workflow_id}\u0000${d}`) ?? null])));
  return out;
}
