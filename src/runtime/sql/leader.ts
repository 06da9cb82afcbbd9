import type { Queryable, QueryOptions } from '../db/types.js';

/**
 * Takes or renews the leader lease: it succeeds for the holder, or for anyone once the lease expired. A
 * takeover starts a new epoch (the fencing token of the leader's writes) and a row of the lease history; a
 * renewal moves its epoch's expiry. Returns the epoch `holder` leads in, or null when it does not lead.
 */
export async function electLeader(q: Queryable, s: string, holder: string, ttlMs: number, now: Date, options: QueryOptions = {}): Promise<number | null> {
  const { rows } = await q.query<{ epoch: string }>(
    `WITH lease AS (
       INSERT INTO ${s}.leader AS l (name, holder, elected_at, expires_at, epoch) VALUES ('leader', $1, $2, $3, 1)
       ON CONFLICT (name) DO UPDATE
         SET holder = EXCLUDED.holder,
             elected_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.elected_at ELSE EXCLUDED.elected_at END,
             expires_at = EXCLUDED.expires_at,
             epoch = CASE WHEN l.holder = EXCLUDED.holder THEN l.epoch ELSE l.epoch + 1 END
       WHERE l.holder = EXCLUDED.holder OR l.expires_at < $2
       RETURNING epoch, holder, elected_at, expires_at
     ), history AS (
       INSERT INTO ${s}.leader_history (epoch, holder, elected_at, expires_at) SELECT epoch, holder, elected_at, expires_at FROM lease
       ON CONFLICT (epoch) DO UPDATE SET expires_at = EXCLUDED.expires_at
     )
     SELECT epoch::text FROM lease`,
    [holder, now, new Date(now.getTime() + ttlMs)],
    options,
  );
  return rows[0] ? Number(rows[0].epoch) : null;
}

/**
 * Gives the lease up at shutdown, so another process takes over at once instead of after expiry: the lease
 * lapses now, and is kept with its epoch (deleted, the next leader would start again at epoch 1, reusing
 * fencing tokens and rewriting the history of the epochs before).
 */
export async function resignLeader(q: Queryable, s: string, holder: string, now: Date, options: QueryOptions = {}): Promise<void> {
  await q.query(
    `WITH lapsed AS (
       UPDATE ${s}.leader SET expires_at = $2 WHERE name = 'leader' AND holder = $1 AND expires_at > $2 RETURNING epoch
     )
     UPDATE ${s}.leader_history h SET expires_at = $2 FROM lapsed WHERE h.epoch = lapsed.epoch`,
    [holder, now],
    options,
  );
}

/**
 * Fences a leader's transaction: true while no other process has taken the lease since `epoch` began (a lease
 * that lapsed untaken is still this holder's to write under), and then the lease row is share-locked until the
 * transaction ends, so no takeover (nor renewal) commits while this leader writes. With `idleLimitMs`, the server
 * ends the transaction (and its session) once it has sat idle that long: a leader whose process stalls mid-write
 * (a handler blocking its event loop, a paused VM) holds the lease no longer than its own term.
 */
export async function holdsLease(q: Queryable, s: string, holder: string, epoch: number, idleLimitMs?: number): Promise<boolean> {
  const { rows } =
    idleLimitMs === undefined
      ? await q.query(`SELECT 1 FROM ${s}.leader WHERE name = 'leader' AND holder = $1 AND epoch = $2 FOR SHARE`, [holder, epoch])
      : await q.query(
          `SELECT 1 FROM ${s}.leader l, (SELECT set_config('idle_in_transaction_session_timeout', $3, true)) c
            WHERE l.name = 'leader' AND l.holder = $1 AND l.epoch = $2 FOR SHARE OF l`,
          [holder, epoch, `${Math.max(1, Math.round(idleLimitMs))}ms`],
        );
  return rows.length > 0;
}

export interface LeaseEpoch {
  epoch: number;
  holder: string;
  elected_at: Date;
  expires_at: Date;
}

/** Every epoch of the lease, oldest first. */
export async function leaseHistory(q: Queryable, s: string): Promise<LeaseEpoch[]> {
  const { rows } = await q.query<LeaseEpoch & { epoch: string }>(
    `SELECT h.epoch::text, h.holder, h.elected_at, h.expires_at FROM ${s}.leader_history h ORDER BY h.epoch`,
  );
  return rows.map((r) => ({ ...r, epoch: Number(r.epoch) }));
}
