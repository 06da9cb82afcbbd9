import { lockTimeoutSetting, type Queryable } from '../db/types.js';

/** Session settings a transaction of braid's own takes for itself. */

/** How long this transaction waits for any lock before it fails (SQLSTATE 55P03), until it ends. */
export async function setLockTimeout(q: Queryable, ms: number): Promise<void> {
  await q.query(`SELECT set_config('lock_timeout', $1, true)`, [lockTimeoutSetting(ms)]);
}

/** Postgres's "lock not available": a lock wait ran past lock_timeout. */
export function isLockTimeout(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '55P03';
}
