import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backend, postgresUrl, uniqueSchema } from './runtime.js';

/** A fresh project folder with the given files (path -> text). */
export function project(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'braid-project-'));
  for (const [path, text] of Object.entries(files)) write(dir, path, text);
  return dir;
}

export function write(dir: string, path: string, text: string): void {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
}

/** A project's database for the backend under test: on Postgres a schema of its own, named in its config; on PGlite its .braid/. */
export function databaseConfig(): { config: string; env: NodeJS.ProcessEnv } {
  return backend === 'postgres'
    ? { config: `database: \${BRAID_TEST_PG}\nschema: ${uniqueSchema()}\n`, env: { BRAID_TEST_PG: postgresUrl, DATABASE_URL: '' } }
    : { config: '', env: { DATABASE_URL: '' } };
}
