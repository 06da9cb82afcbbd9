import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Files whose tests never touch the backend under test (pure passes; the CLI without a database; the embedded
 * database only): `BRAID_TEST_BACKEND_ONLY=1` leaves them out, so CI's second backend pass does not repeat them.
 */
const BACKEND_FREE = [
  'test/compiler/**',
  'test/architecture.test.ts',
  'test/error-codes.test.ts',
  'test/cli.test.ts',
  'test/bounded-inputs.test.ts',
  'test/testing/test-file.properties.test.ts',
  'test/deploy/{diff,fixtures,properties,worker-warnings,action}.test.ts',
  'test/runtime/{attempt,robustness-units,decide,coalesced,embedded,load-handlers}.test.ts',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: process.env.BRAID_TEST_BACKEND_ONLY === '1' ? BACKEND_FREE : [],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // most files wait on a database, a child process or a timer rather than the CPU: one more file than cores
    // runs at once (capped, as each file's pool holds Postgres connections)
    maxWorkers: Math.min(4, availableParallelism() + 1),
  },
});
