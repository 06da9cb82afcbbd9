import type { Queryable } from '../db/types.js';

export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  queues: string[];
  kinds: string[];
  /** The ids of the data keys it was given (its claims pass over tasks that need another). */
  dataKeys: string[];
}

/** A runtime process records itself, the handlers it runs and the data keys it has (ids only). */
export async function registerWorker(q: Queryable, s: string, w: WorkerRegistration, now: Date): Promise<void> {
  await q.query(`SELECT ${s}.register_worker($1, $2, $3, $4, $5, $6)`, [w.id, w.host, w.pid, w.queues, w.kinds, now]);
  await q.query(`UPDATE ${s}.workers SET data_keys = $2 WHERE id = $1`, [w.id, w.dataKeys]);
}

/** The keys that open tasks of these kinds need and the worker lacks, each with how many tasks need it. */
export async function keysLacking(q: Queryable, s: string, kinds: readonly string[], keys: readonly string[]): Promise<{ key: string; tasks: number }[]> {
  const { rows } = await q.query<{ key: string; tasks: number }>(
    `SELECT k AS key, count(*)::int AS tasks FROM ${s}.tasks t CROSS JOIN LATERAL unnest(t.needs_keys) k
      WHERE t.needs_keys IS NOT NULL AND t.lane IS NOT NULL AND t.kind = ANY($1) AND NOT (k = ANY($2)) GROUP BY k ORDER BY k`,
    [kinds, keys],
  );
  return rows;
}

/**
 * A claimed task holds values of keys the worker lacks: it says so on the row (no worker without them claims it
 * again). True when the task has flow control, whose pick does not read the mark (it is given back for a while).
 */
export async function markNeedsKeys(q: Queryable, s: string, workflowId: string, name: string, keys: readonly string[]): Promise<boolean> {
  const { rows } = await q.query<{ flowed: boolean }>(
    `UPDATE ${s}.tasks SET needs_keys = ARRAY(SELECT DISTINCT k FROM unnest(coalesce(needs_keys, '{}') || $3::text[]) k ORDER BY k)
      WHERE workflow_id = $1 AND name = $2 RETURNING flow IS NOT NULL AS flowed`,
    [workflowId, name, keys],
  );
  return rows[0]?.flowed ?? false;
}

/** Which of these data keys a live worker serving `kind` has (braid status: a task that needs one waits for it). */
export async function liveKeys(q: Queryable, s: string, aliveSince: Date): Promise<Map<string, Set<string>>> {
  const { rows } = await q.query<{ kind: string; keys: string[] }>(
    `SELECT k AS kind, array_agg(DISTINCT dk) FILTER (WHERE dk IS NOT NULL) AS keys
       FROM ${s}.workers w CROSS JOIN LATERAL unnest(w.kinds) k LEFT JOIN LATERAL unnest(w.data_keys) dk ON true
      WHERE w.stopped_at IS NULL AND w.heartbeat_at > $1 GROUP BY k`,
    [aliveSince],
  );
  return new Map(rows.map((r) => [r.kind, new Set(r.keys ?? [])]));
}

/** An attempt a worker gave up recording the end of, for the leader to rescue. */
export interface AbandonedAttempt {
  workflow_id: string;
  name: string;
  attempt: number;
}

/**
 * Records that the worker is alive, with the attempts it could not record the end of (the leader rescues
 * them). Returns those still running for it: the others ended (their end committed after all, or were
 * rescued), and the worker stops listing them.
 */
export async function heartbeatWorker(
  q: Queryable,
  s: string,
  id: string,
  now: Date,
  abandoned: readonly AbandonedAttempt[] = [],
  deadlineMs?: number,
): Promise<AbandonedAttempt[]> {
  const { rows } = await q.query<{ abandoned: AbandonedAttempt[] | null }>(
    `SELECT abandoned FROM ${s}.heartbeat($1, $2, $3)`,
    [id, now, abandoned.length === 0 ? null : JSON.stringify(abandoned)],
    { deadlineMs },
  );
  return rows[0]?.abandoned ?? [];
}

/** The liveness thread's heartbeat (its own pg client, the database's clock): a stopped worker is not revived. */
export function livenessBeat(s: string): string {
  return `UPDATE ${s}.workers SET heartbeat_at = now() WHERE id = $1 AND stopped_at IS NULL`;
}

export async function stopWorker(q: Queryable, s: string, id: string, now: Date): Promise<void> {
  await q.query(`SELECT ${s}.stop_worker($1, $2)`, [id, now]);
}

/** Of the given tasks, the workflows of those whose cancel was requested (a worker checks what it holds after missing notifications). */
export async function cancelRequested(q: Queryable, s: string, tasks: readonly { workflow_id: string; name: string }[]): Promise<string[]> {
  const { rows } = await q.query<{ workflow_id: string }>(
    `SELECT DISTINCT t.workflow_id FROM jsonb_to_recordset($1::jsonb) AS k(workflow_id text, name text)
       JOIN ${s}.tasks t ON t.workflow_id = k.workflow_id AND t.name = k.name
      WHERE t.cancel_requested`,
    [JSON.stringify(tasks)],
  );
  return rows.map((r) => r.workflow_id);
}
