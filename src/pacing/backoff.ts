/** Capped exponential backoff with jitter: how long to wait after `failures` failures in a row (1 or more). */
export function backoffMs(failures: number, policy: { initialMs: number; maxMs: number }, random: () => number = Math.random): number {
  const base = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  // half fixed, half random: retries of many workers spread out, and none waits much less than planned
  return Math.round(base / 2 + (random() * base) / 2);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
