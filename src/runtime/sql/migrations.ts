import type { Queryable } from '../db/types.js';

/** The statements of applying migrations (migrate.ts reads the files and applies them in one transaction). */

/** Serializes migrating one schema across processes, until the transaction ends. */
export async function lockMigrations(q: Queryable, schema: string): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`braid:migrate:${schema}`]);
}

/** The ids of the migrations applied, creating the schema and its ledger when they are missing. */
export async function appliedMigrations(q: Queryable, s: string): Promise<Set<number>> {
  await q.exec(
    `CREATE SCHEMA IF NOT EXISTS ${s}; CREATE TABLE IF NOT EXISTS ${s}.migrations (id integer PRIMARY ` +
      `KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());`,
  );
  return new Set((await q.query<{ id: number }>(`SELECT id FROM ${s}.migrations`)).rows.map((r) => r.id));
}

/** Runs one migration's script (its `{{schema}}` placeholders filled) and records it as applied. */
export async function applyMigration(q: Queryable, s: string, m: { id: number; name: string; sql: string }): Promise<void> {
  await q.exec(m.sql.replaceAll('{{schema}}', s));
  await q.query(`INSERT INTO ${s}.migrations (id, name) VALUES ($1, $2)`, [m.id, m.name]);
}
