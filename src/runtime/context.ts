import type { Database, Queryable } from './db/types.js';
import type { DefinitionCache } from './engine/definition-cache.js';
import type { Logger } from './log.js';
import type { AdvanceContext } from './sql/advance.js';
import { currentTime, type Clock } from './sql/time.js';

/**
 * What every part of the runtime works with, built once by the Runtime and handed to its worker, its leader,
 * its maintenance services and its handles: the database, the schema (as named, for NOTIFY channels, and
 * quoted once for SQL), the definition cache, the clock and the log.
 */
export interface RuntimeContext {
  db: Database;
  schema: string;
  s: string;
  definitions: DefinitionCache;
  /** The runtime's only source of time: the database's clock unless a test gives one. */
  clock?: Clock;
  log: Logger;
}

/** The clock's reading (through `tx` when given: everything in one transaction sees one time). */
export function clockNow(ctx: RuntimeContext, tx?: Queryable): Promise<Date> {
  return currentTime(ctx.db, ctx.clock, tx);
}

/** What an advancing transaction needs, at one clock reading. */
export function advanceAt(ctx: RuntimeContext, now: Date): AdvanceContext {
  return { s: ctx.s, schema: ctx.schema, now, definitions: ctx.definitions };
}

/** Runs fn in a transaction, with what advancing needs at the clock's reading through that transaction. */
export function advancing<T>(ctx: RuntimeContext, fn: (tx: Queryable, advance: AdvanceContext) => Promise<T>): Promise<T> {
  return ctx.db.transaction(async (tx) => fn(tx, advanceAt(ctx, await clockNow(ctx, tx))));
}
