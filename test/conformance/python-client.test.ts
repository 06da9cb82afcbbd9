import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/cli.js';
import { backend, postgresUrl, testRuntime } from '../helpers/runtime.js';

// Debian's python3, which sees Debian's python3-psycopg, and mypy (.ci/run installs both where missing)
const PYTHON = '/usr/bin/python3';
const MYPY = ['/usr/bin/mypy', '/usr/local/bin/mypy'].find((p) => existsSync(p));
const env = { ...process.env, PYTHONPATH: join(repoRoot, 'clients/python') };

describe('the Python worker (clients/python)', () => {
  it('type-checks under mypy --strict, and imports with psycopg alone', () => {
    const imported = spawnSync(
      PYTHON,
      [
        '-c',
        'import braid_worker, sys; print(braid_worker.PROTOCOL_REVISION, sorted(m for m in sys.modules if m.split(".")[0] in ("psycopg", "braid_worker"))[0])',
      ],
      {
        env,
        encoding: 'utf8',
      },
    );
    expect(imported.stderr).toBe('');
    expect(imported.stdout.trim()).toBe('1 braid_worker');
    if (!MYPY) {
      console.warn('mypy is not installed (apt-get install mypy): the Python worker was checked by import only');
      return;
    }
    const checked = spawnSync(MYPY, ['--strict', '--no-incremental', '--cache-dir', mkdtempSync(join(tmpdir(), 'mypy-')), 'clients/python/braid_worker'], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    expect(checked.stdout).toMatch(/^Success/);
  });

  it('refuses bad options and a missing handlers module with one line and a non-zero exit', () => {
    const run = (args: string[]) => spawnSync(PYTHON, ['-m', 'braid_worker', ...args], { env: { ...env, DATABASE_URL: '' }, encoding: 'utf8' });
    const noDb = run(['--handlers', 'x']);
    expect(noDb.status).toBe(2);
    expect(noDb.stderr.trim()).toBe('braid_worker: no database: give --dsn or set DATABASE_URL');
    const noModule = run(['--handlers', 'no_such_module_here', '--dsn', 'postgres://127.0.0.1:1/x']);
    expect(noModule.status).toBe(2);
    expect(noModule.stderr).toMatch(/^braid_worker: cannot load handlers no_such_module_here: No module named/);
    expect(noModule.stderr).not.toMatch(/Traceback/);
    const handlers = (args: string[]) =>
      spawnSync(PYTHON, ['-m', 'braid_worker', '--handlers', 'conformance_handlers', ...args], {
        env: { ...env, DATABASE_URL: '', PYTHONPATH: `${env.PYTHONPATH}:${join(repoRoot, 'conformance/handlers')}` },
        encoding: 'utf8',
      });
    const badSchema = handlers(['--dsn', 'postgres://127.0.0.1:1/x', '--schema', 'a b']);
    expect([badSchema.status, badSchema.stderr.trim()]).toEqual([2, "braid_worker: invalid schema name: 'a b'"]);
    // a database it cannot reach at start, or a DSN that is no DSN: one line, exit 1 (later outages are retried)
    for (const dsn of ['postgres://braid@127.0.0.1:1/x', 'garbage ===']) {
      const r = handlers(['--dsn', dsn]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^braid_worker: cannot use the database: .+\n$/);
    }
  });

  it.runIf(backend === 'postgres')('refuses to run against another protocol revision (exit 3), naming both', async () => {
    const rt = await testRuntime();
    const s = `"${rt.schema}"`;
    await rt.db.query(`CREATE OR REPLACE FUNCTION ${s}.protocol() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$`);
    try {
      const r = spawnSync(PYTHON, ['-m', 'braid_worker', '--handlers', 'conformance_handlers', '--dsn', postgresUrl, '--schema', rt.schema], {
        env: { ...env, PYTHONPATH: `${env.PYTHONPATH}:${join(repoRoot, 'conformance/handlers')}` },
        encoding: 'utf8',
      });
      expect(r.status).toBe(3);
      expect(r.stderr.trim()).toBe('braid_worker: the database speaks braid worker protocol revision 2, this worker revision 1: upgrade braid-worker');
    } finally {
      await rt.db.query(`CREATE OR REPLACE FUNCTION ${s}.protocol() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`);
    }
  });
});
