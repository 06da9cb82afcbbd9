import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../paths.js';
import type { Database } from './db/types.js';
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
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`braid:migrate:${schema}`]);
    await tx.exec(`CREATE SCHEMA IF NOT EXISTS ${s}; CREATE TABLE IF NOT EXISTS ${s}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());`);
    const done = new Set((await tx.query<{ id: number }>(`SELECT id FROM ${s}.migrations`)).rows.map((r) => r.id));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      await tx.exec(m.sql.replaceAll('{{schema}}', s));
      await tx.query(`INSERT INTO ${s}.migrations (id, name) VALUES ($1, $2)`, [m.id, m.name]);
      applied.push(m.name);
    }
    return applied;
  });
}
