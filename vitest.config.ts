import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { measurePatience } from './test/helpers/patience.js';
import { BACKEND_FREE, HEAVY } from './test/helpers/suites.js';

/**
 * `BRAID_TEST_BACKENDS=postgres,pglite` (CI) runs the suite once per backend in one run: a project each, so
 * files of both share the workers and neither backend waits for the other's slowest files. Without it, the
 * runtime suites run on the backend `BRAID_TEST_BACKEND` names (or on Postgres when `DATABASE_URL` is set).
 * `BRAID_TEST_HEAVY=only` runs just the files that take turns on Postgres, `skip` all but them.
 */
const backends = (process.env.BRAID_TEST_BACKENDS ?? '').split(',').filter(Boolean);
const unknown = backends.filter((b) => b !== 'postgres' && b !== 'pglite');
if (unknown.length > 0) throw new Error(`BRAID_TEST_BACKENDS: unknown backend(s) ${unknown.join(', ')} (postgres, pglite)`);
const heavy = process.env.BRAID_TEST_HEAVY;
if (heavy !== undefined && heavy !== 'only' && heavy !== 'skip') throw new Error(`BRAID_TEST_HEAVY must be only or skip, not "${heavy}"`);

// measured once here and handed to every test process (they inherit the environment)
const patience = measurePatience();
process.env.BRAID_TEST_PATIENCE = String(patience);
// this run's mark on the schemas and tables its tests make in a shared database (test/global-setup.ts drops them)
process.env.BRAID_TEST_RUN ??= Date.now().toString(36);

export default defineConfig({
  test: {
    include: heavy === 'only' ? HEAVY : ['test/**/*.test.ts'],
    exclude: heavy === 'skip' ? HEAVY : [],
    testTimeout: Math.round(30_000 * patience),
    hookTimeout: Math.round(60_000 * patience),
    pool: 'forks',
    // a worker's files share its modules: the runtime, the compiler and the test database load once per worker,
    // not once per file (what a file leaves behind, test/setup.ts undoes through helpers/file-end.ts)
    isolate: false,
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    // most files wait on a database, a child process or a timer rather than the CPU: one more file than cores
    // runs at once (capped, as each file's pool holds Postgres connections); the heavy files take turns anyway,
    // so their lane runs one at a time (set here: a --maxWorkers flag did not reach the projects)
    maxWorkers: heavy === 'only' ? 1 : Math.min(4, availableParallelism() + 1),
    ...(backends.length > 0 && {
      projects: backends.map((backend, i) => ({
        extends: true,
        test: {
          name: backend,
          // the embedded backend's run has no server: the commands it spawns must not find one either
          env: backend === 'pglite' ? { BRAID_TEST_BACKEND: backend, DATABASE_URL: '' } : { BRAID_TEST_BACKEND: backend },
          exclude: [...(heavy === 'skip' ? HEAVY : []), ...(i === backends.length - 1 ? [] : BACKEND_FREE)],
        },
      })),
    }),
  },
});
