import { createHash } from 'node:crypto';
import pg from 'pg';
import { QUERYABLE, setClientAdopter, type Database, type PgClientLike, type Queryable } from './types.js';
import { backoffMs } from '../backoff.js';

/**
 * int8 (bigint ids, counts) as JS numbers in braid's own queries only: braid's ids and counters stay far
 * below 2^53, and an application sharing `pg` (or its pool) keeps its own parsers.
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === 20 && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser,
};

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
};

/** A pg client (a pool's, in a transaction the caller opened) as braid's Queryable. */
export function clientQueryable(client: pg.ClientBase): Queryable {
  return {
    [QUERYABLE]: true,
    async query(sql, params, options) {
      const r = await client.query({ ...prepared(sql, params, options?.prepare), types });
      return { rows: r.rows, rowCount: r.rowCount ?? 0 };
    },
    async exec(sql) {
      await client.query(sql);
    },
  };
}

const statementNames = new Map<string, string>();

/** A named statement for a prepared query: pg prepares it once per connection and reuses the plan. */
function prepared(sql: string, params: readonly unknown[] | undefined, prepare: boolean | undefined): pg.QueryConfig {
  if (!prepare) return { text: sql, values: params as unknown[], types };
  let name = statementNames.get(sql);
  if (!name) {
    name = `braid_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    statementNames.set(sql, name);
  }
  return { name, text: sql, values: params as unknown[], types };
}

setClientAdopter((client: PgClientLike) => clientQueryable(client as unknown as pg.ClientBase));

/**
 * Postgres through a pg Pool (its own, or the application's); LISTEN runs on one dedicated client that
 * reconnects when dropped.
 */
export function createPostgres(options: PostgresOptions): Database {
  const own = !('pool' in options);
  // the hot pool and the listener connect as the pool does: its connection string or settings
  const connection: pg.ClientConfig = own ? { connectionString: options.connectionString } : { ...(options.pool.options as pg.ClientConfig) };
  const max = own ? (options.max ?? 10) : (options.pool.options.max ?? 10);
  const pool = own ? new pg.Pool({ ...connection, max, application_name: options.applicationName ?? 'braid' }) : options.pool;
  // braid's hot statements (claims, completions) run on connections of their own that always use a generic
  // plan: re-planning them on every call cost about a tenth of the database's time per task, and their key
  // lookups plan the same whatever the values. A generic plan made while the tables are small (or their
  // statistics stale) would keep scanning them whole in a nested loop once a fan-out makes hundreds of
  // dependents ready at once; priced as on SSDs, key lookups win that choice. Everything else, handlers'
  // own SQL included, keeps the server's settings.
  const hot = new pg.Pool({
    ...connection,
    max: Math.min(4, max),
    application_name: `${options.applicationName ?? 'braid'}:hot`,
    options: '-c plan_cache_mode=force_generic_plan -c random_page_cost=1.1',
  });
  // an idle client dropping (server restart) must not kill the process; the next query reconnects
  if (own) pool.on('error', () => undefined);
  hot.on('error', () => undefined);
  const listeners = new Map<string, Set<(payload: string) => void>>();
  const resumers = new Set<() => void>();
  let listenClient: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;

  const connectListener = async (): Promise<pg.Client> => {
    const client = new pg.Client({ ...connection, application_name: `${options.applicationName ?? 'braid'}:listen` });
    client.on('notification', (msg) => {
      for (const fn of listeners.get(msg.channel) ?? []) fn(msg.payload ?? '');
    });
    const lost = () => {
      if (listenClient !== client) return;
      listenClient = undefined;
      client.end().catch(() => undefined);
      scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      for (const channel of listeners.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    listenClient = client;
    return client;
  };
  const ensureListener = async (): Promise<pg.Client> => {
    if (listenClient) return listenClient;
    connecting ??= connectListener().finally(() => (connecting = undefined));
    return connecting;
  };
  // after an outage: reconnect for as long as it takes (capped, jittered backoff), then tell the listeners
  // that notifications may have been missed
  const scheduleReconnect = (): void => {
    if (closed || reconnectTimer) return;
    failures++;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      ensureListener().then(
        () => {
          failures = 0;
          for (const fn of resumers) fn();
        },
        () => scheduleReconnect(),
      );
    }, backoffMs(failures, { initialMs: 100, maxMs: 10_000 }));
    reconnectTimer.unref();
  };

  const query: Queryable['query'] = async (sql, params, options) => {
    const r = await (options?.prepare ? hot : pool).query(prepared(sql, params, options?.prepare));
    return { rows: r.rows, rowCount: r.rowCount ?? 0 };
  };

  return {
    [QUERYABLE]: true,
    kind: 'postgres',
    query,
    async exec(sql) {
      await pool.query(sql);
    },
    async transaction(fn) {
      const client = await pool.connect();
      let broken = false;
      const markBroken = () => (broken = true);
      client.on('error', markBroken);
      const tx = clientQueryable(client);
      try {
        await client.query('BEGIN');
        const result = await fn(tx);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(markBroken);
        throw error;
      } finally {
        client.off('error', markBroken);
        // a connection that failed under the transaction is closed, not handed to the next one
        client.release(broken || undefined);
      }
    },
    async listen(channel, onNotify, onResume) {
      let set = listeners.get(channel);
      const isNew = !set;
      if (!set) listeners.set(channel, (set = new Set()));
      set.add(onNotify);
      if (onResume) resumers.add(onResume);
      const client = await ensureListener();
      if (isNew && client === listenClient) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return async () => {
        set!.delete(onNotify);
        if (onResume) resumers.delete(onResume);
      };
    },
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      await listenClient?.end().catch(() => undefined);
      await Promise.all([own ? pool.end() : undefined, hot.end()]);
    },
  };
}
