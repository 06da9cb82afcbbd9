/** Anything that runs SQL: a pool, a connection inside a transaction, a caller's own transaction. */
export interface QueryOptions {
  /**
   * A statement on the hot path: prepared once per connection and, outside a transaction, planned once (a
   * generic plan), so neither its parse nor its plan is rebuilt every call.
   */
  prepare?: boolean;
  /**
   * This statement's client-side deadline in ms, instead of the database's default (0: none, for a handler's
   * own SQL): past it the statement fails and its connection is closed, never reused.
   */
  deadlineMs?: number;
  /** Sealed sensitive values read `[redacted]` (a read that shows data to people), not opened. */
  redact?: boolean;
  /** A value sealed with a data key this process lacks stays sealed, its holders marked (a worker's claim). */
  keepUnopened?: boolean;
}

export interface Queryable {
  /** Marks braid's own (see isQueryable). */
  readonly [QUERYABLE]: true;
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<{ rows: R[]; rowCount: number }>;
  /** Runs a script of several statements (migrations), without parameters. */
  exec(sql: string): Promise<void>;
}

export interface TransactionOptions {
  lockTimeoutMs?: number;
}

/** lock_timeout's setting for a bound in ms (at least 1: 0 would mean none). */
export function lockTimeoutSetting(ms: number): string {
  return `${Math.max(1, Math.round(ms))}ms`;
}

/** One database, whichever engine: the runtime only ever talks to this. */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs fn in a transaction: committed when it resolves, rolled back when it throws. `lockTimeoutMs` bounds
   * its lock waits (lock_timeout, set with BEGIN: no round trip of its own).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Delivers NOTIFY payloads on a channel (after the notifying transaction commits). The notification
   * connection reconnects by itself after an outage; `onResume` is called then, as notifications sent while it
   * was down were missed.
   */
  listen(channel: string, onNotify: (payload: string) => void, onResume?: () => void): Promise<() => Promise<void>>;
  /**
   * A connection of its own, outside the pools, for a statement that must not wait behind other work (the
   * leader lease): made when first used, replaced when it fails. The embedded database has one session: itself.
   */
  dedicated(): Queryable;
  /**
   * How another thread connects to this database (cloneable settings), for the worker's liveness thread;
   * undefined where it cannot: the embedded database (one session, in this thread), or an application's pool
   * whose settings hold functions.
   */
  connectionSettings(): Record<string, unknown> | undefined;
  close(): Promise<void>;
}

/** A pg client the caller holds (a pool's client, or a Client) in a transaction it opened. */
export interface PgClientLike {
  query(config: { text: string; values?: unknown[]; types?: unknown; name?: string }): Promise<{ rows: unknown[]; rowCount: number | null }>;
  query(text: string): Promise<unknown>;
}

/**
 * A write either runs on its own (one transaction of its own) or inside the caller's transaction: a
 * transaction braid handed out, or a pg client of the application's with a transaction open.
 */
export interface TxOption {
  tx?: Queryable | PgClientLike;
}

/** braid's Queryables are marked, so a caller's pg client (which also has `query`) is told apart and adopted. */
export const QUERYABLE = Symbol('braid.queryable');

export function isQueryable(q: unknown): q is Queryable {
  return typeof q === 'object' && q !== null && QUERYABLE in q;
}

let adoptClient: ((client: PgClientLike) => Queryable) | undefined;

/** Set by the Postgres adapter: how a caller's pg client becomes a Queryable (its queries get braid's type parsers). */
export function setClientAdopter(adopt: (client: PgClientLike) => Queryable): void {
  adoptClient = adopt;
}

/** The caller's transaction as a Queryable. */
export function txQueryable(tx: Queryable | PgClientLike): Queryable {
  if (isQueryable(tx)) return tx;
  if (!adoptClient) throw new TypeError('a pg client was passed as tx, but the Postgres adapter is not loaded');
  return adoptClient(tx);
}

export async function inTransaction<T>(db: Database, options: TxOption | undefined, fn: (tx: Queryable) => Promise<T>, own?: TransactionOptions): Promise<T> {
  if (!options?.tx) return db.transaction(fn, own);
  assertInTransaction(options.tx);
  return fn(txQueryable(options.tx));
}

/** A caller's `tx` that is no open transaction: its writes would commit at once, out of reach of its ROLLBACK. */
export class TxNotInTransactionError extends Error {
  readonly code = 'tx_not_in_transaction' as const;
  constructor(why: string) {
    super(`the tx passed is not in a transaction (tx_not_in_transaction): ${why}; nothing was written`);
    this.name = 'TxNotInTransactionError';
  }
}

/**
 * Refuses, before anything is written, a pg client whose connection is not inside a transaction (the status
 * its server sent with its last ready-for-query: idle, or a failed transaction) and a pool, whose queries
 * each take any connection. braid's own transactions are transactions.
 */
function assertInTransaction(tx: Queryable | PgClientLike): void {
  if (isQueryable(tx)) return;
  const client = tx as { getTransactionStatus?: () => string | null; totalCount?: unknown; connect?: unknown };
  if (typeof client.totalCount === 'number' && typeof client.connect === 'function') {
    throw new TxNotInTransactionError('it is a pool, whose queries each take any connection: pass a client after BEGIN');
  }
  const status = typeof client.getTransactionStatus === 'function' ? client.getTransactionStatus() : undefined;
  if (status === 'I') throw new TxNotInTransactionError('the client has not sent BEGIN, so each statement would commit on its own');
  if (status === 'E') throw new TxNotInTransactionError('its transaction has failed (an earlier statement errored): ROLLBACK, then BEGIN again');
}

/** The same queryable with no client-side deadline on its statements, unless one is asked for: a handler's own SQL. */
export function unbounded(q: Queryable): Queryable {
  return {
    [QUERYABLE]: true,
    query: (sql, params, options) => q.query(sql, params, { ...options, deadlineMs: options?.deadlineMs ?? 0 }),
    exec: (sql) => q.exec(sql),
  };
}

/** A round trip that proves the database answers (a new connection's first check). */
export async function ping(q: Queryable): Promise<void> {
  await q.query('SELECT 1');
}

/** A Queryable whose reads show sealed sensitive values as `[redacted]` (what is shown to people). */
export function redacting(q: Queryable): Queryable {
  return {
    [QUERYABLE]: true,
    query: (sql, params, options) => q.query(sql, params, { ...options, redact: true }),
    exec: (sql) => q.exec(sql),
  };
}
