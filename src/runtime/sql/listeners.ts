import type { Queryable } from '../db/types.js';

/** A live view says it listens for change notifications until `ttlMs` from now (renew before then). */
export async function registerListener(q: Queryable, s: string, id: string, ttlMs: number): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.change_listeners (id, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')
     ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
    [id, ttlMs],
  );
}

export async function unregisterListener(q: Queryable, s: string, id: string): Promise<void> {
  await q.query(`DELETE FROM ${s}.change_listeners WHERE id = $1 OR expires_at < now() - interval '1 hour'`, [id]);
}
