import { spawnSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';

/** Node's own start-up (`node -e 0`) on this machine when idle: the speed the suite's deadlines were set at. */
const REFERENCE_MS = 70;

/**
 * How much slower than idle the machine runs now, measured once per run (vitest.config.ts) as the fastest of
 * three Node start-ups, between 1 and 10: the suite's deadlines are multiplied by it, so a busy machine gets
 * the time it needs instead of a fixed guess. `BRAID_TEST_PATIENCE` sets it.
 */
export function measurePatience(): number {
  const set = Number(process.env.BRAID_TEST_PATIENCE);
  if (Number.isFinite(set) && set >= 1) return set;
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    best = Math.min(best, performance.now() - t);
  }
  return Math.round(Math.min(10, Math.max(1, best / REFERENCE_MS)) * 10) / 10;
}

/** The run's measured factor (vitest.config.ts hands it to every test process). */
export const PATIENCE = Math.max(1, Number(process.env.BRAID_TEST_PATIENCE) || 1);

/**
 * How much slower than idle the machine runs right now: the run's measured factor, or the load per core when
 * that is higher (the suite's own lanes load the machine only after the run's start was measured).
 */
function stretch(): number {
  return Math.min(10, Math.max(PATIENCE, loadavg()[0] / availableParallelism()));
}

/** A deadline of `ms` on an idle machine, stretched by how busy this one is. */
export const patient = (ms: number): number => Math.round(ms * stretch());
