import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectToken } from '../../src/cli/backend.js';
import { createPglite, DatabaseDamagedError, DatabaseLockedError, lockHolder } from '../../src/runtime/db/pglite.js';
import { keepImage, readImage } from '../../src/runtime/db/pglite-image.js';
import { repoRoot, runCli } from '../helpers/cli.js';
import { exited, printed } from '../helpers/processes.js';

/** test/helpers/open-embedded.ts as built (npm test builds first), as the CLI's processes run built too. */
const openEmbedded = join(repoRoot, 'dist/test/helpers/open-embedded.js');

/**
 * Starts `n` processes opening the same folder at the same instant (a moment after all are loaded and say so);
 * resolves with what each printed after "ready".
 */
async function openAtOnce(dir: string, n: number, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const children = Array.from({ length: n }, () => spawn(process.execPath, [openEmbedded, dir], { cwd: repoRoot, env: { ...process.env, ...env } }));
  const outputs = children.map((c) => {
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (out += d.toString()));
    return { ready: printed({ child: c, output: () => out }, 'ready\n'), done: exited(c).then(() => out.replace(/^ready\n/, '').trim()) };
  });
  await Promise.all(outputs.map((o) => o.ready));
  const at = String(Date.now() + 200);
  for (const c of children) c.stdin.end(`${at}\n`);
  return Promise.all(outputs.map((o) => o.done));
}

/** Every folder and file under a path with a mode wider than its owner's. */
function shared(path: string): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    const st = lstatSync(p);
    if ((st.mode & 0o077) !== 0) out.push(`${p} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(path);
  return out;
}

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

  it('a new folder starts from the kept image of an initdb; with none, initdb runs and keeps one', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'braid-tmp-'));
    const dir = mkdtempSync(join(tmpdir(), 'braid-pglite-'));
    const image = () => {
      const names = readdirSync(tmp).filter((f) => /^braid-initdb-[0-9a-f]{16}\.tar$/.test(f));
      expect(names).toHaveLength(1);
      return statSync(join(tmp, names[0]));
    };
    expect(await openAtOnce(join(dir, 'a'), 1, { TMPDIR: tmp })).toEqual(['opened']);
    const kept = image();
    expect(kept.mode & 0o777).toBe(0o600);
    // loaded, not made again: the same file
    expect(await openAtOnce(join(dir, 'b'), 1, { TMPDIR: tmp })).toEqual(['opened']);
    expect(image().ino).toBe(kept.ino);
    for (const name of ['a', 'b']) {
      const db = await createPglite({ dataDir: join(dir, name) });
      expect((await db.query('SELECT count(*)::int AS n FROM opened_by')).rows).toEqual([{ n: 1 }]);
      await db.close();
    }
  }, 120_000);

  it('an image is loaded only when this user wrote it and nobody else can write it', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'braid-tmp-'));
    const path = join(tmp, 'braid-initdb-0123456789abcdef.tar');
    expect(readImage(path)).toBeUndefined();
    await keepImage(path, new Blob(['an image']));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await readImage(path)!.text()).toBe('an image');
    expect(Buffer.from(await readImage(path)!.arrayBuffer()).toString()).toBe('an image');
    chmodSync(path, 0o620);
    expect(readImage(path)).toBeUndefined();
    chmodSync(path, 0o644);
    expect(readImage(path)).toBeDefined();
    if (process.getuid?.() === 0) {
      chownSync(path, 65534, 65534);
      expect(readImage(path)).toBeUndefined();
    }
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

  it('ten processes opening one folder at the same instant: exactly one opens it, the others are told who holds it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-race-'));
    const outcomes = await openAtOnce(dir, 10);
    expect(outcomes.filter((o) => o === 'opened')).toHaveLength(1);
    for (const o of outcomes.filter((o) => o !== 'opened')) expect(o).toMatch(/^DatabaseLockedError: the embedded database in .* is in use by process \d+$/);
    // a stale lock (its process is dead) raced for by ten: again exactly one
    writeFileSync(join(dir, 'braid.lock'), '999999');
    const again = await openAtOnce(dir, 10);
    expect(again.filter((o) => o === 'opened')).toHaveLength(1);
    expect(again.filter((o) => /Damaged/.test(o))).toEqual([]);
    const db = await createPglite({ dataDir: dir });
    expect((await db.query('SELECT count(*)::int AS n FROM opened_by')).rows).toEqual([{ n: 2 }]);
    await db.close();
  }, 120_000);

  it(".braid and everything under it are the owner's only; a token file readable by others is made private, and said so", async () => {
    const project = mkdtempSync(join(tmpdir(), 'braid-private-'));
    const status = runCli(['status', 'nope'], { cwd: project, env: { DATABASE_URL: '' } });
    expect(status.code).toBe(1);
    expect(statSync(join(project, '.braid')).mode & 0o777).toBe(0o700);
    expect(shared(join(project, '.braid'))).toEqual([]);
    const errors: string[] = [];
    const io = { cwd: project, stdout: () => undefined, stderr: (s: string) => void errors.push(s), isTTY: false };
    const token = projectToken(io);
    expect(statSync(join(project, '.braid', 'token')).mode & 0o777).toBe(0o600);
    expect(errors).toEqual([]);
    chmodSync(join(project, '.braid', 'token'), 0o644);
    chmodSync(join(project, '.braid'), 0o755);
    expect(projectToken(io)).toBe(token);
    expect(statSync(join(project, '.braid', 'token')).mode & 0o777).toBe(0o600);
    expect(statSync(join(project, '.braid')).mode & 0o777).toBe(0o700);
    expect(errors.join('')).toMatch(/^braid: \.braid\/token could be read by other users: it is now owner-only \(0600\)/);
  }, 60_000);
});
