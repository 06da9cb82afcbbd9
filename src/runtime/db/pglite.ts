import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Database, Queryable } from './types.js';

export interface PgliteOptions {
  /** A folder to persist to; in memory when absent. */
  dataDir?: string;
  /** A data folder image to start from (fast clones in tests). */
  loadDataDir?: Blob;
}

/** The embedded database is held by another live process. */
export class DatabaseLockedError extends Error {
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
  constructor(dataDir: string, cause: unknown) {
    super(`cannot open the embedded database in ${dataDir}: ${(cause as Error)?.message ?? String(cause)}. ` + `If it is damaged, move the folder away (or delete it) to start afresh.`);
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

/** Which live process holds a data folder, if any (a lock file whose pid is dead is stale). */
export function lockHolder(dataDir: string): number | undefined {
  const path = join(dataDir, LOCK_FILE);
  if (!existsSync(path)) return undefined;
  const pid = Number(readFileSync(path, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid) ? pid : undefined;
}

function takeLock(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const holder = lockHolder(dataDir);
  if (holder !== undefined) throw new DatabaseLockedError(dataDir, holder);
  const path = join(dataDir, LOCK_FILE);
  writeFileSync(path, String(process.pid));
  return () => {
    try {
      if (readFileSync(path, 'utf8').trim() === String(process.pid)) rmSync(path);
    } catch {
      /* already gone */
    }
  };
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
    db = await PGlite.create(dataDir ? join(dataDir, 'pgdata') : undefined, options.loadDataDir ? { loadDataDir: options.loadDataDir } : {});
  } catch (error) {
    release();
    if (dataDir) throw new DatabaseDamagedError(dataDir, error);
    throw error;
  }
  const query: Queryable['query'] = async (sql, params) => {
    const r = await db.query(sql, params as unknown[]);
    return { rows: r.rows as never[], rowCount: r.affectedRows ?? r.rows.length };
  };
  return {
    kind: 'pglite',
    query,
    async exec(sql) {
      await db.exec(sql);
    },
    transaction(fn) {
      return db.transaction(async (tx) =>
        fn({
          async query(sql, params) {
            const r = await tx.query(sql, params as unknown[]);
            return { rows: r.rows as never[], rowCount: r.affectedRows ?? r.rows.length };
          },
          async exec(sql) {
            await tx.exec(sql);
          },
        }),
      );
    },
    dump: () => db.dumpDataDir('none') as Promise<Blob>,
    async listen(channel, onNotify) {
      const unlisten = await db.listen(channel, onNotify);
      return async () => unlisten();
    },
    async close() {
      try {
        if (!db.closed) await db.close();
      } finally {
        release();
      }
    },
  };
}

