import { createPglite, type PgliteDatabase } from '../db/pglite.js';
import { imagePath, keepImage, readImage } from '../db/pglite-image.js';
import { loadMigrations, migrate } from './migrate.js';

/**
 * The image of a freshly migrated database (braid's schema, `braid`, and nothing else), named by the
 * migrations too: a new embedded database with braid's schema loads it instead of migrating.
 */
function migratedImagePath(): string {
  return imagePath('embedded', ...loadMigrations().map((m) => `${m.name}\u0000${m.sql}`));
}

/** The kept migrated image, when this release made one for this user. */
export function cachedImage(): Blob | undefined {
  return readImage(migratedImagePath());
}

/** Keeps the image of `db`, which must be freshly migrated (with the default schema) and hold nothing else. */
export async function keepMigratedImage(db: PgliteDatabase): Promise<void> {
  await keepImage(migratedImagePath(), await db.dump());
}

/** An in-memory embedded database with braid's schema (braid test, and braid's own tests), from the image when kept. */
export async function migratedDatabase(): Promise<PgliteDatabase> {
  const image = cachedImage();
  if (image) {
    try {
      const db = await createPglite({ loadDataDir: image });
      const applied = await migrate(db);
      if (applied.length === 0) return db;
      await db.close();
    } catch {
      // made again below
    }
  }
  const db = await createPglite();
  await migrate(db);
  await keepMigratedImage(db);
  return db;
}
