import type { Queryable } from '../db/types.js';

/**
 * Takes or renews the leader lease: it succeeds for the holder, or for anyone once the lease expired.
 * Returns whether `holder` leads now.
 */
export async function electLeader(q: Queryable, s: string, holder: string, ttlMs: number, now: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO ${s}.leader AS l (name, holder, elected_at, expires_at) VALUES ('leader', $1, $2, $3)
     ON CONFLICT (name) DO UPDATE
       SET holder = EXCLUDED.holder,
           elected_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.elected_at ELSE EXCLUDED.elected_at END,
           expires_at = EXCLUDED.expires_at
     WHERE l.holder = EXCLUDED.holder OR l.expires_at < $2`,
    [holder, now, new Date(now.getTime() + ttlMs)],
  );
  return rowCount > 0;
}

/** Gives the lease up at shutdown, so another process takes over at once instead of after expiry. */
export async function resignLeader(q: Queryable, s: string, holder: string): Promise<void> {
  await q.query(`DELETE FROM ${s}.leader WHERE name = 'leader' AND holder = $1`, [holder]);
}
