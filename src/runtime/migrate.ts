import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../paths.js';
import type { Database } from './db/types.js';
import { appliedMigrations, applyMigration, lockMigrations } from './sql/migrations.js';
import { quoteIdent } from './sql/schema.js';

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** migrations/NNN_name.sql, in order. */
export function loadMigrations(dir = join(packageRoot, 'migrations')): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ id: Number(f.split('_')[0]), name: f.replace(/\.sql$/, ''), sql: readFileSync(join(dir, f), 'utf8') }));
}

/**
 * Applies the migrations not yet applied, each once and recorded, in one transaction under an advisory
 * lock, so processes starting together never apply one twice. Returns the names applied.
 */
export async function migrate(db: Database, schema = 'braid'): Promise<string[]> {
  const s = quoteIdent(schema);
  const migrations = loadMigrations();
  return db.transaction(async (tx) => {
    await lockMigrations(tx, schema);
    const done = await appliedMigrations(tx, s);
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      await applyMigration(tx, s, m);
      applied.push(m.name);
    }
    return applied;
  });
}
