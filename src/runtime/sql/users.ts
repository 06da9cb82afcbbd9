import type { Queryable } from '../db/types.js';
import type { UserRecord } from '../wire/index.js';

const COLUMNS = 'name, role, workflows, created_at, expires_at, revoked_at';

export interface UserRow extends UserRecord {
  token_hash: string;
}

export async function insertUser(
  q: Queryable,
  s: string,
  u: { name: string; role: string; workflows: string | null; tokenId: string; tokenHash: string; now: Date; expiresAt: Date | null },
): Promise<UserRecord | undefined> {
  const { rows } = await q.query<UserRecord>(
    `INSERT INTO ${s}.users (name, role, workflows, token_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
    [u.name, u.role, u.workflows, u.tokenId, u.tokenHash, u.now, u.expiresAt],
  );
  return rows[0];
}

/** A new token for a user (rotate): the old one stops working in the same statement. */
export async function replaceToken(
  q: Queryable,
  s: string,
  u: { name: string; tokenId: string; tokenHash: string; expiresAt: Date | null },
): Promise<UserRecord | undefined> {
  const { rows } = await q.query<UserRecord>(
    `UPDATE ${s}.users SET token_id = $2, token_hash = $3, expires_at = $4, revoked_at = NULL WHERE name = $1 RETURNING ${COLUMNS}`,
    [u.name, u.tokenId, u.tokenHash, u.expiresAt],
  );
  return rows[0];
}

export async function revokeUser(q: Queryable, s: string, name: string, now: Date): Promise<UserRecord | undefined> {
  const { rows } = await q.query<UserRecord>(`UPDATE ${s}.users SET revoked_at = coalesce(revoked_at, $2) WHERE name = $1 RETURNING ${COLUMNS}`, [name, now]);
  return rows[0];
}

export async function listUsers(q: Queryable, s: string): Promise<UserRecord[]> {
  const { rows } = await q.query<UserRecord>(`SELECT ${COLUMNS} FROM ${s}.users ORDER BY name`);
  return rows;
}

export async function userByTokenId(q: Queryable, s: string, tokenId: string): Promise<UserRow | undefined> {
  const { rows } = await q.query<UserRow>(`SELECT ${COLUMNS}, token_hash FROM ${s}.users WHERE token_id = $1`, [tokenId]);
  return rows[0];
}

/** Whether any user was ever added (revoked ones count: the bootstrap token does not come back). */
export async function anyUser(q: Queryable, s: string): Promise<boolean> {
  const { rows } = await q.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${s}.users) AS any`);
  return rows[0].any;
}
