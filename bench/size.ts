/**
 * The bench's sizes: its own defaults, or with BENCH_TINY=1 a run small enough for CI to prove that every
 * section still runs and prints every line (its figures mean nothing at that size). An explicit variable wins.
 */
const tiny = process.env.BENCH_TINY === '1';

export function size(variable: string, full: number, small: number): number {
  const set = process.env[variable];
  return set !== undefined && set !== '' ? Number(set) : tiny ? small : full;
}
