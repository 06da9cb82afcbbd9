import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { privateDir, tightenTree } from '../../private-files.js';
import { imagePath, keepImage, readImage } from './pglite-image.js';
import { parseOpened, parseOpenedKeeping, parseRedacted } from './sealing.js';
import { type Database, lockTimeoutSetting, QUERYABLE, type Queryable, type QueryOptions } from './types.js';

/** json and jsonb with sensitive values opened (braid's own reads), or redacted (reads shown to people). */
const OPENING = { 114: parseOpened, 3802: parseOpened };
const REDACTING = { 114: parseRedacted, 3802: parseRedacted };
const KEEPING = { 114: parseOpenedKeeping, 3802: parseOpenedKeeping };
const parsersFor = (options: QueryOptions | undefined) => (options?.redact ? REDACTING : options?.keepUnopened ? KEEPING : OPENING);

export interface PgliteOptions {
  /** A folder to persist to; in memory when absent. */
  dataDir?: string;
  /** A data folder image to start from (fast clones in tests); a new database otherwise starts from a kept image of an initdb. */
  loadDataDir?: Blob;
}

/** The embedded database is held by another live process. */
export class DatabaseLockedError extends Error {
  readonly code = 'database_locked' as const;
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`the embedded database in ${dataDir} is in use by process ${pid}`);
    this.name = 'DatabaseLockedError';
  }
}

/** The data folder cannot be opened: damaged, or written by an incompatible version. */
export class DatabaseDamagedError extends Error {
  readonly code = 'database_damaged' as const;
  constructor(dataDir: string, cause: unknown) {
    super(
      `cannot open the embedded database in ${dataDir}: ${(cause as Error)?.message ?? String(cause)}. ` +
        `If it is damaged, move the folder away (or delete it) to start afresh.`,
    );
    this.name = 'DatabaseDamagedError';
  }
}

export interface PgliteDatabase extends Database {
  /** An image of the data folder, to start other instances from (tests migrate once, then clone). */
  dump(): Promise<Blob>;
}

const LOCK_FILE = 'braid.lock';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in a lock file: undefined when there is none, NaN when it holds no pid (being written, or garbage). */
function readPid(path: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : NaN;
}

/** Which live process holds a data folder, if any (a lock file whose pid is dead is stale). */
export function lockHolder(dataDir: string): number | undefined {
  const pid = readPid(join(dataDir, LOCK_FILE));
  return pid !== undefined && Number.isInteger(pid) && pid !== process.pid && isAlive(pid) ? pid : undefined;
}

/** Links `from` to `to` atomically: false when `to` exists. Falls back to an exclusive create where links are not supported. */
function linkExclusive(from: string, to: string, content: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
  }
  try {
    writeFileSync(to, content, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * Takes the data folder's lock atomically: the lock file appears at once with this process's pid (a hard link
 * of a file already written), so of processes starting together exactly one gets it and the others see its
 * pid. A lock whose pid is dead is taken over under a second lock, so two processes cannot both take it over.
 */
function takeLock(dataDir: string): () => void {
  privateDir(dataDir);
  const path = join(dataDir, LOCK_FILE);
  const mine = String(process.pid);
  const temp = join(dataDir, `${LOCK_FILE}.${process.pid}.${randomBytes(4).toString('hex')}`);
  writeFileSync(temp, mine, { mode: 0o600 });
  try {
    for (let tries = 0; ; tries++) {
      if (linkExclusive(temp, path, mine)) break;
      const holder = readPid(path);
      if (holder === undefined) continue; // released meanwhile: try again
      if (Number.isNaN(holder) && tries < 50) {
        // being written by a process without hard links: give it a moment
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
        continue;
      }
      if (holder !== process.pid && Number.isInteger(holder) && isAlive(holder)) throw new DatabaseLockedError(dataDir, holder);
      if (!takeOverStale(dataDir, path, temp, holder, mine)) {
        if (tries > 200) throw new Error(`cannot take the lock of ${dataDir}: it keeps changing hands`);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
        continue;
      }
      break;
    }
  } finally {
    rmSync(temp, { force: true });
  }
  return () => {
    try {
      if (readPid(path) === process.pid) rmSync(path);
    } catch {
      /* already gone */
    }
  };
}

/** Replaces a stale lock (its holder is dead) with this process's, under a takeover lock of its own; false when another process is at it. */
function takeOverStale(dataDir: string, path: string, temp: string, stale: number, mine: string): boolean {
  const guard = join(dataDir, `${LOCK_FILE}.takeover`);
  if (!linkExclusive(temp, guard, mine)) {
    // another process is taking over; a takeover lock left by a process that died doing so is removed
    const other = readPid(guard);
    if (other !== undefined && Number.isInteger(other) && !isAlive(other)) rmSync(guard, { force: true });
    return false;
  }
  try {
    const now = readPid(path);
    if (now !== undefined && !Object.is(now, stale)) return false; // it changed hands meanwhile
    rmSync(path, { force: true });
    return linkExclusive(temp, path, mine);
  } finally {
    rmSync(guard, { force: true });
  }
}

/**
 * PGlite: real Postgres in WASM, one session, in this process. It has no locking between processes, so a
 * persisted data folder is guarded by a lock file holding the owner's pid (a dead owner's lock is taken over).
 */
export async function createPglite(options: PgliteOptions = {}): Promise<PgliteDatabase> {
  const dataDir = options.dataDir;
  const release = dataDir ? takeLock(dataDir) : () => undefined;
  let db: PGlite;
  try {
    if (dataDir) privateDir(join(dataDir, 'pgdata'));
    // loaded here, not at the top: a CLI command against Postgres (or the API) never pays for the WASM engine
    const { PGlite } = await import('@electric-sql/pglite');
    const fresh = !options.loadDataDir && !(dataDir && existsSync(join(dataDir, 'pgdata', 'PG_VERSION')));
    const initdb = fresh ? imagePath('initdb') : undefined;
    const image = options.loadDataDir ?? (initdb && readImage(initdb));
    db = await PGlite.create(dataDir ? join(dataDir, 'pgdata') : undefined, {
      ...(image ? { loadDataDir: image } : {}),
      // the engine zeroes its shared memory at every start: with initdb's 128 MB of buffers and room for 100
      // connections an open costs ~0.6 s more CPU here than with 8 MB and the one session it ever has (pages
      // beyond the buffers come from the file system's cache; a workload of 30,000 rows ran no slower)
      startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=8MB', '-c', 'max_connections=4'],
    });
    // the first new database made here: what initdb made, before anything else is written, for the next one
    if (initdb && !image) await keepImage(initdb, (await db.dumpDataDir('none')) as Blob);
    // the engine writes its files readable by all: they are the owner's only (inside a 0700 folder anyway)
    if (dataDir) tightenTree(dataDir);
  } catch (error) {
    release();
    if (dataDir) throw new DatabaseDamagedError(dataDir, error);
    throw error;
  }
  const query: Queryable['query'] = async (sql, params, options) => {
    const r = await db.query(sql, params as unknown[], { parsers: parsersFor(options) });
    return { rows: r.rows as never[], rowCount: r.affectedRows ?? r.rows.length };
  };
  const database: PgliteDatabase = {
    [QUERYABLE]: true,
    kind: 'pglite',
    query,
    async exec(sql) {
      await db.exec(sql);
    },
    transaction(fn, options) {
      return db.transaction(async (tx) => {
        if (options?.lockTimeoutMs !== undefined) await tx.query(`SELECT set_config('lock_timeout', $1, true)`, [lockTimeoutSetting(options.lockTimeoutMs)]);
        return fn({
          [QUERYABLE]: true,
          async query(sql, params, options) {
            const r = await tx.query(sql, params as unknown[], { parsers: parsersFor(options) });
            return { rows: r.rows as never[], rowCount: r.affectedRows ?? r.rows.length };
          },
          async exec(sql) {
            await tx.exec(sql);
          },
        });
      });
    },
    dump: () => db.dumpDataDir('none') as Promise<Blob>,
    dedicated: () => database,
    connectionSettings: () => undefined,
    async listen(channel, onNotify) {
      const unlisten = await db.listen(channel, onNotify);
      return async () => unlisten();
    },
    async close() {
      try {
        if (!db.closed) await db.close();
      } finally {
        if (dataDir) tightenTree(dataDir);
        release();
      }
    },
  };
  return database;
}
