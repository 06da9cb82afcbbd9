import { createHash } from 'node:crypto';
import pg from 'pg';
import { bounded, destroySocket, PgListener } from './pg-listener.js';
import { plannerOptions } from './planner.js';
import { parseOpened, parseOpenedKeeping, parseRedacted } from './sealing.js';
import {
  type Database,
  lockTimeoutSetting,
  type PgClientLike,
  QUERYABLE,
  type Queryable,
  type QueryOptions,
  setClientAdopter,
  type TransactionOptions,
} from './types.js';

/**
 * int8 (bigint ids, counts) as JS numbers in braid's own queries only: braid's ids and counters stay far
 * below 2^53, and an application sharing `pg` (or its pool) keeps its own parsers.
 */
const typesWith = (json: (text: string) => unknown) => ({
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    format === 'binary'
      ? pg.types.getTypeParser(oid, format)
      : oid === 20
        ? (v: string) => Number(v)
        : oid === JSON_OID || oid === JSONB_OID
          ? json
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
});
const JSON_OID = 114;
const JSONB_OID = 3802;
/** json and jsonb with sensitive values opened (braid's own reads), or redacted (reads shown to people). */
const types = typesWith(parseOpened);
const redactingTypes = typesWith(parseRedacted);
const keepingTypes = typesWith(parseOpenedKeeping);

export type PostgresOptions = (
  | {
      connectionString: string;
      /** Pool size (default 10). */
      max?: number;
    }
  | {
      /** The application's own pool: braid runs its queries and transactions there, and never ends it. */
      pool: pg.Pool;
    }
) & {
  /** Name shown in pg_stat_activity. */
  applicationName?: string;
  /**
   * The client-side deadline of every braid statement (default 20 s): a network that hangs without failing (a
   * hung server or pooler, a partition without RST) fails the statement there, and its connection is closed.
   */
  statementTimeoutMs?: number;
  /** How long opening a connection may take (default 10 s). */
  connectTimeoutMs?: number;
  /** How long an idle connection of braid's own pools stays open (default 10 s). */
  idleTimeoutMs?: number;
};

export const DEFAULT_STATEMENT_TIMEOUT_MS = 20_000;
/** A statement that ran past its client-side deadline (pg's "Query read timeout"): its connection is not reused. */
function isDeadline(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
}

/** A pg client (a pool's, in a transaction the caller opened) as braid's Queryable; deadlineMs bounds its statements. */
export function clientQueryable(client: pg.ClientBase, deadlineMs = 0): Queryable {
  return {
    [QUERYABLE]: true,
    async query(sql, params, options) {
      const r = await client.query({ ...prepared(sql, params, options?.prepare, options?.deadlineMs ?? deadlineMs), types: typesFor(options) });
      return { rows: r.rows, rowCount: r.rowCount ?? 0 };
    },
    async exec(sql) {
      await client.query(sql);
    },
  };
}

const typesFor = (options: QueryOptions | undefined) => (options?.redact ? redactingTypes : options?.keepUnopened ? keepingTypes : types);

const statementNames = new Map<string, string>();

/** A statement's config: named when prepared (pg prepares it once per connection), with its deadline (0: none). */
function prepared(sql: string, params: readonly unknown[] | undefined, prepare: boolean | undefined, deadlineMs: number): pg.QueryConfig {
  const bound = (deadlineMs > 0 ? { query_timeout: deadlineMs } : {}) as Partial<pg.QueryConfig>;
  if (!prepare) return { text: sql, values: params as unknown[], types, ...bound };
  let name = statementNames.get(sql);
  if (!name) {
    name = `braid_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    statementNames.set(sql, name);
  }
  return { name, text: sql, values: params as unknown[], types, ...bound };
}

setClientAdopter((client: PgClientLike) => clientQueryable(client as unknown as pg.ClientBase));

/** The dedicated connection: one client, connected on first use, dropped when it fails (the next use reconnects). */
function dedicatedConnection(config: pg.ClientConfig, deadlineMs: number): { queryable: Queryable; close(): Promise<void> } {
  let dedicatedClient: Promise<pg.Client> | undefined;
  const dropDedicated = (client: Promise<pg.Client>) => {
    if (dedicatedClient !== client) return;
    dedicatedClient = undefined;
    void client.then(destroySocket).catch(() => undefined);
  };
  const queryable: Queryable = {
    [QUERYABLE]: true,
    async query(sql, params, queryOptions) {
      const current = (dedicatedClient ??= (async () => {
        const c = new pg.Client(config);
        c.on('error', () => dropDedicated(current));
        await c.connect();
        return c;
      })());
      try {
        const client = await current;
        const r = await client.query({ ...prepared(sql, params, false, queryOptions?.deadlineMs ?? deadlineMs), types: typesFor(queryOptions) });
        return { rows: r.rows, rowCount: r.rowCount ?? 0 };
      } catch (error) {
        dropDedicated(current);
        throw error;
      }
    },
    async exec(sql) {
      await queryable.query(sql);
    },
  };
  return {
    queryable,
    close: async () => {
      await dedicatedClient?.then((c) => c.end()).catch(() => undefined);
    },
  };
}

/** fn in a transaction on one of the pool's connections; a connection that failed under it is closed, not reused. */
async function poolTransaction<T>(pool: pg.Pool, deadlineMs: number, fn: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  const markBroken = () => (broken = true);
  client.on('error', markBroken);
  const tx = clientQueryable(client, deadlineMs);
  try {
    // a setting goes with BEGIN, in one simple query (its value is braid's own number, never a caller's text)
    const lock = options?.lockTimeoutMs !== undefined ? `; SET LOCAL lock_timeout = '${lockTimeoutSetting(options.lockTimeoutMs)}'` : '';
    await client.query(bounded(`BEGIN${lock}`, deadlineMs));
    const result = await fn(tx);
    await client.query(bounded('COMMIT', deadlineMs));
    return result;
  } catch (error) {
    // a connection whose statement hung is not asked for anything more: it is closed, which rolls back
    if (isDeadline(error)) markBroken();
    else await client.query(bounded('ROLLBACK', deadlineMs)).catch(markBroken);
    throw error;
  } finally {
    client.off('error', markBroken);
    // a connection that failed under the transaction is closed, not handed to the next one
    client.release(broken || undefined);
  }
}

/**
 * Postgres through a pg Pool (its own, or the application's); LISTEN runs on one dedicated client that
 * reconnects when dropped.
 */
export function createPostgres(options: PostgresOptions): Database {
  const own = !('pool' in options);
  const deadlineMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  // TCP keepalive and a connect timeout on every connection braid opens: a dead peer is noticed, not waited on
  const bounds = {
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMillis: options.idleTimeoutMs }),
  };
  // the hot pool and the listener connect as the pool does: its connection string or settings
  const connection: pg.ClientConfig = own
    ? { connectionString: options.connectionString, ...bounds }
    : { ...bounds, ...(options.pool.options as pg.ClientConfig) };
  const max = own ? (options.max ?? 10) : (options.pool.options.max ?? 10);
  const pool = own ? new pg.Pool({ ...connection, max, application_name: options.applicationName ?? 'braid' }) : options.pool;
  // braid's hot statements (claims, completions) run on connections of their own, planned as planner.ts says
  // (one generic plan, no table read whole) and priced as on SSDs. Everything else, handlers' own SQL included,
  // keeps the server's settings.
  const hot = new pg.Pool({
    ...connection,
    max: Math.min(4, max),
    application_name: `${options.applicationName ?? 'braid'}:hot`,
    // braid's statements only: a transaction of its own left idle (its client gone quiet) is ended by the server,
    // and a statement outliving its client-side deadline (its client gone) is cancelled there too
    options:
      `${plannerOptions()} -c random_page_cost=1.1 -c idle_in_transaction_session_timeout=${Math.max(60_000, deadlineMs * 3)}` +
      (deadlineMs > 0 ? ` -c statement_timeout=${deadlineMs + 1000}` : ''),
  });
  // an idle client dropping (server restart) must not kill the process; the next query reconnects
  if (own) pool.on('error', () => undefined);
  hot.on('error', () => undefined);
  const dedicated = dedicatedConnection({ ...connection, application_name: `${options.applicationName ?? 'braid'}:dedicated` }, deadlineMs);
  const notifications = new PgListener({ ...connection, application_name: `${options.applicationName ?? 'braid'}:listen` });

  // a statement past its deadline releases its connection with the error: the pool closes it
  const query: Queryable['query'] = async (sql, params, options) => {
    const r = await (options?.prepare ? hot : pool).query({
      ...prepared(sql, params, options?.prepare, options?.deadlineMs ?? deadlineMs),
      types: typesFor(options),
    });
    return { rows: r.rows, rowCount: r.rowCount ?? 0 };
  };

  return {
    [QUERYABLE]: true,
    kind: 'postgres',
    query,
    async exec(sql) {
      await pool.query(sql);
    },
    transaction: (fn, options) => poolTransaction(pool, deadlineMs, fn, options),
    listen: (channel, onNotify, onResume) => notifications.listen(channel, onNotify, onResume),
    dedicated: () => dedicated.queryable,
    connectionSettings() {
      try {
        return structuredClone({ ...connection, application_name: `${options.applicationName ?? 'braid'}:liveness` }) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    },
    async close() {
      await notifications.close();
      await dedicated.close();
      await Promise.all([own ? pool.end() : undefined, hot.end()]);
    },
  };
}
