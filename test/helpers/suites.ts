/**
 * How the suite's files divide, for vitest.config.ts (and the architecture test that keeps the lists true).
 *
 * Files whose tests never touch the backend under test (pure passes; the CLI without a database; the embedded
 * database only): when several backends run, they run once, with the last.
 */
export const BACKEND_FREE = [
  'test/compiler/**',
  'test/access/privacy-room.test.ts',
  'test/architecture.test.ts',
  'test/error-codes.test.ts',
  'test/cli.test.ts',
  'test/docs.test.ts',
  'test/api/route-table.test.ts',
  'test/bounded-inputs.test.ts',
  'test/conformance/python-contract.test.ts',
  'test/package.test.ts',
  'test/testing/**',
  'test/deploy/{diff,fixtures,properties,worker-warnings,action}.test.ts',
  'test/runtime/{attempt,robustness-units,decide,coalesced,embedded,load-handlers,migration-installs}.test.ts',
];

/**
 * Files that run several braid processes against the shared Postgres (`heavyFile()`): they take turns, so CI
 * runs them in a lane of their own from the start, beside the rest, instead of after it.
 */
export const HEAVY = [
  'test/conformance/conformance.test.ts',
  'test/conformance/mixed-workers.test.ts',
  'test/conformance/python-outage.test.ts',
  'test/incidents/bulk-processes.test.ts',
  'test/deploy/upgrade-faults.test.ts',
  'test/runtime/busy-handler.test.ts',
  'test/runtime/faults.test.ts',
  'test/runtime/for-each-kills.test.ts',
  'test/runtime/flow-processes.test.ts',
  'test/runtime/multi-process.test.ts',
  'test/runtime/schedule-processes.test.ts',
  'test/runtime/silent-outage.test.ts',
  'test/runtime/timer-storm.test.ts',
];
