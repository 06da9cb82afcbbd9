import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPglite, DatabaseDamagedError, DatabaseLockedError, lockHolder } from '../../src/runtime/db/pglite.js';
import { runCli } from '../helpers/cli.js';

describe('the embedded database (PGlite in a data folder)', () => {
  it('persists across opens, and releases its lock file on close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-pglite-'));
    const db = await createPglite({ dataDir: dir });
    expect(readFileSync(join(dir, 'braid.lock'), 'utf8')).toBe(String(process.pid));
    await db.query('CREATE TABLE kept (v int)');
    await db.query('INSERT INTO kept VALUES (42)');
    await db.close();
    expect(existsSync(join(dir, 'braid.lock'))).toBe(false);
    const again = await createPglite({ dataDir: dir });
    expect((await again.query<{ v: number }>('SELECT v FROM kept')).rows).toEqual([{ v: 42 }]);
    await again.close();
  });

  it('a folder held by a live process is refused; a stale lock (dead pid) is taken over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-pglite-'));
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      writeFileSync(join(dir, 'braid.lock'), String(sleeper.pid));
      expect(lockHolder(dir)).toBe(sleeper.pid);
      await expect(createPglite({ dataDir: dir })).rejects.toBeInstanceOf(DatabaseLockedError);
    } finally {
      sleeper.kill('SIGKILL');
    }
    await new Promise((r) => sleeper.on('exit', r));
    expect(lockHolder(dir)).toBeUndefined();
    const db = await createPglite({ dataDir: dir });
    expect(readFileSync(join(dir, 'braid.lock'), 'utf8')).toBe(String(process.pid));
    await db.close();
  });

  it('a damaged data folder gives one clear error with a recovery hint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-pglite-'));
    const db = await createPglite({ dataDir: dir });
    await db.close();
    const pgdata = join(dir, 'pgdata');
    writeFileSync(join(pgdata, 'PG_VERSION'), 'not a version\n');
    for (const f of readdirSync(join(pgdata, 'global'))) writeFileSync(join(pgdata, 'global', f), 'garbage');
    const error = await createPglite({ dataDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseDamagedError);
    expect((error as Error).message).toMatch(/cannot open the embedded database in .*move the folder away/);
    expect(existsSync(join(dir, 'braid.lock'))).toBe(false);

    const project = mkdtempSync(join(tmpdir(), 'braid-damaged-'));
    const run = runCli(['status', 'x'], { cwd: project, env: { DATABASE_URL: '' } });
    expect(run.code).toBe(1);
    const damagedProject = mkdtempSync(join(tmpdir(), 'braid-damaged-'));
    await createPglite({ dataDir: join(damagedProject, '.braid', 'db') }).then((d) => d.close());
    writeFileSync(join(damagedProject, '.braid', 'db', 'pgdata', 'PG_VERSION'), 'garbage\n');
    const broken = runCli(['status', 'x'], { cwd: damagedProject, env: { DATABASE_URL: '' } });
    expect(broken.code).toBe(3);
    expect(broken.stderr).toMatch(/^braid: cannot open the embedded database .*move the folder away/);
    expect(broken.stderr.trim().split('\n')).toHaveLength(1);
  }, 120_000);
});
