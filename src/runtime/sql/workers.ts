import type { Queryable } from '../db/types.js';

export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  queues: string[];
  kinds: string[];
}

/** A runtime process records itself and the handlers it runs. */
export async function registerWorker(q: Queryable, s: string, w: WorkerRegistration, now: Date): Promise<void> {
  await q.query(`SELECT ${s}.register_worker($1, $2, $3, $4, $5, $6)`, [w.id, w.host, w.pid, w.queues, w.kinds, now]);
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
