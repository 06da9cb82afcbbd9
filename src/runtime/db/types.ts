/** Anything that runs SQL: a pool, a connection inside a transaction, a caller's own transaction. */
export interface QueryOptions {
  /**
   * A statement on the hot path: prepared once per connection and, outside a transaction, planned once (a
   * generic plan), so neither its parse nor its plan is rebuilt every call.
   */
  prepare?: boolean;
}

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<{ rows: R[]; rowCount: number }>;
  /** Runs a script of several statements (migrations), without parameters. */
  exec(sql: string): Promise<void>;
}

/** One database, whichever engine: the runtime only ever talks to this. */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in a transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Delivers NOTIFY payloads on a channel (after the notifying transaction commits). The notification
   * connection reconnects by itself after an outage; `onResume` is called then, as notifications sent while it
   * was down were missed.
   */
  listen(channel: string, onNotify: (payload: string) => void, onResume?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A write either runs on its own (one transaction of its own) or inside the caller's transaction. */
export interface TxOption {
  tx?: Queryable;
}

export async function inTransaction<T>(db: Database, options: TxOption | undefined, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return options?.tx ? fn(options.tx) : db.transaction(fn);
}
