import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMigrations, sourceHash } from '../../src/runtime/setup/migrate.js';

/** A package root with the given migrations and source files. */
function root(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'braid-migrations-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const FN = 'CREATE OR REPLACE FUNCTION {{schema}}.f() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;\n';
const named = (hash: string) => `-- braid:install src/f.sql sha256:${hash}\n`;

describe('migrations that install a source file', () => {
  it('the latest migration naming a file installs it; the earlier ones do not (a fresh database gets it once)', () => {
    const h = sourceHash(FN).slice(0, 16);
    const list = loadMigrations(root({ 'migrations/001_a.sql': `SELECT 1;\n${named('0123456789abcdef')}`, 'migrations/002_b.sql': named(h), 'src/f.sql': FN }));
    expect(list.map((m) => m.sql.includes('CREATE OR REPLACE FUNCTION'))).toEqual([false, true]);
    expect(list[1].sql.endsWith(FN)).toBe(true);
  });

  it('a file changed without a new migration naming its hash is refused, saying what to add', () => {
    const dir = root({ 'migrations/001_a.sql': named(sourceHash(FN).slice(0, 16)), 'src/f.sql': FN.replace('2', '3') });
    expect(() => loadMigrations(dir)).toThrow(
      new RegExp(
        `src/f.sql has changed since migration 001_a named it .*\\(-- braid:install src/f.sql sha256:${sourceHash(FN.replace('2', '3')).slice(0, 16)}`,
      ),
    );
  });

  it("braid's own migrations load: every file they install has the hash its latest migration names", () => {
    const list = loadMigrations();
    expect(list.find((m) => m.name === '032_dead_letters')?.sql).toContain('CREATE OR REPLACE FUNCTION {{schema}}.flow_pick(');
  });
});
