import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../paths.js';
import { createPglite, type PgliteDatabase } from './db/pglite.js';
import { loadMigrations } from './migrate.js';
import { createRuntime } from './runtime.js';

/**
 * A new embedded database takes seconds to create and migrate, and a second or less to load from an image of
 * one that was. The image of a freshly migrated database (braid's schema, `braid`, and nothing else) is kept
 * in the system's temporary folder, named by a digest of the migrations and the engine's version, so only
 * the release that made it uses it; a missing, stale or unreadable one is made again.
 */
function imagePath(): string {
  const migrations = loadMigrations();
  const digest = createHash('sha256')
    .update(`${engineVersion()}\u0000${migrations.map((m) => `${m.name}\u0000${m.sql}`).join('\u0000')}`)
    .digest('hex')
    .slice(0, 16);
  return join(tmpdir(), `braid-embedded-${digest}.tar`);
}

/**
 * The kept image, when this release made one for this user: the temporary folder is shared, and an image
 * another user wrote (or could rewrite) is never loaded into this user's database.
 */
export function cachedImage(): Blob | undefined {
  const path = imagePath();
  try {
    if (!existsSync(path)) return undefined;
    const st = statSync(path);
    if (!st.isFile() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o022) !== 0) return undefined;
    return new Blob([readFileSync(path)]);
  } catch {
    return undefined;
  }
}

/** Keeps the image of `db`, which must be freshly migrated (with the default schema) and hold nothing else. */
export async function keepImage(db: PgliteDatabase): Promise<void> {
  const path = imagePath();
  try {
    // written aside and renamed: a reader never sees half an image, and racing writers each write a whole one
    const tmp = `${path}.${process.pid}`;
    writeFileSync(tmp, Buffer.from(await (await db.dump()).arrayBuffer()), { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path);
  } catch {
    // a read-only temporary folder only costs the next new database its migration
  }
}

/** An in-memory embedded database with braid's schema (braid test, and braid's own tests), from the image when kept. */
export async function migratedDatabase(): Promise<PgliteDatabase> {
  const image = cachedImage();
  if (image) {
    try {
      const db = await createPglite({ loadDataDir: image });
      const applied = await createRuntime({ database: db, leader: false }).migrate();
      if (applied.length === 0) return db;
      await db.close();
    } catch {
      // made again below
    }
  }
  const db = await createPglite();
  await createRuntime({ database: db, leader: false }).migrate();
  await keepImage(db);
  return db;
}

/** braid's own version and the engine's it depends on: an image is only reused by the release that made it. */
function engineVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string; dependencies?: Record<string, string> };
  return `${pkg.version}\u0000${pkg.dependencies?.['@electric-sql/pglite'] ?? ''}`;
}
