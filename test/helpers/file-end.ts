/**
 * What to undo after each test file. Test files share their worker's modules (vitest.config.ts: isolate is
 * off, so the helpers and the runtime load once per worker, not once per file): a helper that keeps per-file
 * state (runtimes, schemas, child processes) registers its clean-up here, and test/setup.ts runs them all
 * after each file.
 */
const cleanups: (() => Promise<void> | void)[] = [];

export function afterEachFile(cleanup: () => Promise<void> | void): void {
  cleanups.push(cleanup);
}

/** Runs the clean-ups, the last registered first: a helper's undoes what the helpers it builds on left (its processes before their schemas). */
export async function endFile(): Promise<void> {
  for (const cleanup of [...cleanups].reverse()) await cleanup();
}
