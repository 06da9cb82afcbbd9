import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../paths.js';
import type { Database } from '../db/types.js';
import { appliedMigrations, applyMigration, lockMigrations } from '../sql/migrations.js';
import { generatedProtocolSql } from '../sql/protocol.js';
import { quoteIdent } from '../sql/schema.js';

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** `-- braid:install PATH sha256:HEX`: the migration installs a source file of the package (a function's body). */
const INSTALL = /^-- braid:install (\S+) sha256:([0-9a-f]{16,64})$/gm;

/**
 * `-- braid:generate NAME sha256:HEX`: the migration installs SQL that braid's code writes (the protocol's
 * claim and completion, from the statements braid tunes in TypeScript), pinned by hash as a file is.
 */
const GENERATED: Record<string, () => string> = { protocol: () => generatedProtocolSql('{{schema}}') };
const GENERATE = /^-- braid:generate (\S+) sha256:([0-9a-f]{16,64})$/gm;

/** A source file a migration installs, as named there. */
interface Install {
  path: string;
  hash: string;
}

/** The hex sha256 of a text (how a migration names the version of a file it installs). */
export function sourceHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * migrations/NNN_name.sql, in order, each with the source files it installs appended. A file named by several
 * migrations is installed by the latest only (a fresh database gets today's text once, after the schema it
 * reads; a database that applied the earlier ones gets it from the latest), and the latest must name the file's
 * hash: a change to the file without a new migration would reach no database that has migrated already.
 */
export function loadMigrations(root = packageRoot): Migration[] {
  const dir = join(root, 'migrations');
  const files = readdirSync(dir)
    .filter((f) => /^\d+_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ id: Number(f.split('_')[0]), name: f.replace(/\.sql$/, ''), sql: readFileSync(join(dir, f), 'utf8') }));
  const installs = files.map((m) => [
    ...[...m.sql.matchAll(INSTALL)].map(([, path, hash]): Install => ({ path, hash })),
    ...[...m.sql.matchAll(GENERATE)].map(([, name, hash]): Install => ({ path: `generate:${name}`, hash })),
  ]);
  const latest = new Map<string, number>(installs.flatMap((list, i) => list.map((x): [string, number] => [x.path, i])));
  return files.map((m, i) => ({
    ...m,
    sql: [m.sql, ...installs[i].filter((x) => latest.get(x.path) === i).map((x) => installed(root, m.name, x))].join('\n'),
  }));
}

/** The text of a file a migration installs, refused when its hash is not the one the migration names. */
function installed(root: string, migration: string, x: Install): string {
  const generated = x.path.startsWith('generate:') ? x.path.slice('generate:'.length) : undefined;
  if (generated !== undefined && !GENERATED[generated]) throw new Error(`migration ${migration} generates ${generated}, which braid does not write`);
  const text = generated !== undefined ? GENERATED[generated]() : readFileSync(join(root, x.path), 'utf8');
  const hash = sourceHash(text);
  if (generated !== undefined && !hash.startsWith(x.hash)) {
    throw new Error(
      `the generated SQL ${generated} has changed since migration ${migration} named it (sha256:${x.hash}, now ${hash.slice(0, 16)}): ` +
        `a new migration must install it (-- braid:generate ${generated} sha256:${hash.slice(0, 16)}), or databases that migrated keep the old one`,
    );
  }
  if (!hash.startsWith(x.hash)) {
    throw new Error(
      `${x.path} has changed since migration ${migration} named it (sha256:${x.hash}, now ${hash.slice(0, 16)}): ` +
        `a new migration must install it (-- braid:install ${x.path} sha256:${hash.slice(0, 16)}), or databases that migrated keep the old one`,
    );
  }
  return text;
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
