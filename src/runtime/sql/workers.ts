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
  await q.query(
    `INSERT INTO ${s}.workers (id, host, pid, queues, kinds, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
     ON CONFLICT (id) DO UPDATE SET queues = EXCLUDED.queues, kinds = EXCLUDED.kinds, heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = NULL`,
    [w.id, w.host, w.pid, w.queues, w.kinds, now],
  );
}

export async function heartbeatWorker(q: Queryable, s: string, id: string, now: Date): Promise<void> {
  await q.query(`UPDATE ${s}.workers SET heartbeat_at = $2 WHERE id = $1`, [id, now]);
}

export async function stopWorker(q: Queryable, s: string, id: string, now: Date): Promise<void> {
  await q.query(`UPDATE ${s}.workers SET stopped_at = $2, heartbeat_at = $2 WHERE id = $1`, [id, now]);
}
