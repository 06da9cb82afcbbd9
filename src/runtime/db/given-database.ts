import type pg from 'pg';
import { createPostgres } from './postgres.js';
import type { Database } from './types.js';

/**
 * The database an application gave createRuntime (`database`): a connection string (braid opens and owns a
 * pool), the application's `pg.Pool` (braid runs on it and never ends it) or an adapter (createPostgres,
 * createPglite). From JavaScript nothing checks the option's type, so anything else is one clear error rather than
 * a TypeError from deep inside.
 */
export function givenDatabase(given: unknown, bounds: { statementTimeoutMs?: number }): { db: Database; owned: boolean } {
  if (typeof given === 'string') return { db: createPostgres({ connectionString: given, ...bounds }), owned: true };
  if (typeof given !== 'object' || given === null || typeof (given as pg.Pool).query !== 'function')
    throw new TypeError(
      'createRuntime: `database` must be a connection string, a pg.Pool or an adapter (createPostgres, createPglite); ' +
        `it is ${given === null ? 'null' : typeof given}`,
    );
  // a pool is told from an adapter by shape, not class: the application's pg may be another copy than braid's
  if ('kind' in given && typeof (given as Database).transaction === 'function') return { db: given as Database, owned: false };
  return { db: createPostgres({ pool: given as pg.Pool, ...bounds }), owned: true };
}
