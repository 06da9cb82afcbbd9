import type { DataKeys } from '../db/sealing.js';
import { type Database, inTransaction, type Queryable, type TxOption } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import type { DefinitionCache } from '../engine/definition-cache.js';
import { WorkflowBusyError } from '../errors.js';
import type { KeyRing } from '../outside/secrets.js';
import { isLockTimeout } from '../sql/session.js';
import { type Clock, currentTime } from '../sql/time.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import type { Tracing } from '../telemetry/tracing.js';

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
  /** How long a write of the API waits for its workflow's lock before it fails as busy. */
  lockTimeoutMs: number;
  /** Where the worker and the leader count what they do (braid worker --metrics-port); none by default. */
  metrics?: Metrics;
  /** Where spans go (OpenTelemetry, when the application registers a provider). */
  tracing?: Tracing;
  /** The keys that sign callback links (none: links cannot be made, and every token is unknown). */
  keys?: KeyRing;
  /** Where this deployment's links are served, for their full URLs. */
  publicUrl?: string;
  /** The keys sensitive values are sealed with (config keys:, BRAID_KEYS), the first one current. */
  dataKeys?: DataKeys;
}

/** The clock's reading (through `tx` when given: everything in one transaction sees one time). */
export function clockNow(ctx: RuntimeContext, tx?: Queryable): Promise<Date> {
  return currentTime(ctx.db, ctx.clock, tx);
}

/** What an advancing transaction needs, at one clock reading. */
export function advanceAt(ctx: RuntimeContext, now: Date): AdvanceContext {
  return { s: ctx.s, schema: ctx.schema, now, definitions: ctx.definitions, tracing: ctx.tracing, dataKeys: ctx.dataKeys };
}

/** What advancing needs at the clock's reading through `tx`: a sequence in a transaction sees one time. */
export async function advanceIn(ctx: RuntimeContext, tx?: Queryable): Promise<AdvanceContext> {
  return advanceAt(ctx, await clockNow(ctx, tx));
}

/** Runs fn in a transaction, with what advancing needs at the clock's reading through that transaction. */
export function advancing<T>(ctx: RuntimeContext, fn: (tx: Queryable, advance: AdvanceContext) => Promise<T>): Promise<T> {
  return ctx.db.transaction(async (tx) => fn(tx, await advanceIn(ctx, tx)));
}

/**
 * A write of the API on one workflow (emit, cancel, retry, extend, upgrade, a start by business key): in a
 * transaction of braid's own, whose lock waits are bounded by lock_timeout, or in the caller's (whose settings
 * stand). A lock wait past the bound is a WorkflowBusyError, and the connection is free again.
 */
export async function workflowWrite<T>(
  ctx: RuntimeContext,
  options: TxOption | undefined,
  workflowId: string,
  fn: (tx: Queryable, advance: AdvanceContext) => Promise<T>,
): Promise<T> {
  try {
    return await inTransaction(ctx.db, options, async (tx) => fn(tx, await advanceIn(ctx, tx)), { lockTimeoutMs: ctx.lockTimeoutMs });
  } catch (error) {
    if (isLockTimeout(error)) throw new WorkflowBusyError(workflowId, ctx.lockTimeoutMs);
    throw error;
  }
}
