import type { Queryable } from '../db/types.js';

/** Savepoints: a step that may fail inside a transaction that must go on (its failure recorded in it). */
export type SavepointName = 'bulk_item' | 'event_start';

export async function savepoint(q: Queryable, name: SavepointName): Promise<void> {
  await q.query(`SAVEPOINT ${name}`);
}

export async function rollbackTo(q: Queryable, name: SavepointName): Promise<void> {
  await q.query(`ROLLBACK TO SAVEPOINT ${name}`);
}
