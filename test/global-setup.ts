import { createPostgres } from '../src/runtime/db/postgres.js';

/** What a run older than this left in the shared database (it was killed before its teardown) is dropped too. */
const STALE_MS = 24 * 3_600_000;

/** Whether this run's tests used Postgres (as test/helpers/runtime.ts decides its backend). */
function usedPostgres(): boolean {
  const backends = (process.env.BRAID_TEST_BACKENDS ?? '').split(',').filter(Boolean);
  if (backends.length > 0) return backends.includes('postgres');
  return process.env.BRAID_TEST_BACKEND === 'postgres' || (process.env.BRAID_TEST_BACKEND !== 'pglite' && Boolean(process.env.DATABASE_URL));
}

/**
 * After the run: its schemas and scratch tables are dropped from the shared database (each file empties its
 * own, and a worker keeps the emptied ones for its next files until the run ends), with those of runs killed
 * before their own teardown.
 */
export async function teardown(): Promise<void> {
  const run = process.env.BRAID_TEST_RUN;
  if (!run || !usedPostgres()) return;
  const db = createPostgres({
    connectionString: process.env.DATABASE_URL || 'postgres://braid:braid@127.0.0.1:5432/braid_test',
    max: 1,
    connectTimeoutMs: 5000,
  });
  try {
    const ours = (name: string) => {
      const made = Number.parseInt(name.split('_')[1] ?? '', 36);
      return name.split('_')[1] === run || (Number.isFinite(made) && made < Date.now() - STALE_MS);
    };
    const { rows: schemas } = await db.query<{ name: string }>(`SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 't\\_%'`);
    for (const { name } of schemas.filter((r) => ours(r.name))) await db.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    const { rows: tables } = await db.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'scratch\\_%'`,
    );
    for (const { name } of tables.filter((r) => ours(r.name))) await db.query(`DROP TABLE IF EXISTS public."${name}"`);
  } finally {
    await db.close();
  }
}
