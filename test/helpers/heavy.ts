import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { pidAlive } from './pid-alive.js';
import { backend } from './runtime.js';

/** Files run side by side; this lock is shared by every clone on the machine, as they share one server. */
const LOCK = join(tmpdir(), 'braid-tests-heavy.lock');
/** The longest a heavy file waits for the others (they take a minute or two each). */
const WAIT_MS = 15 * 60_000;

const mtime = (path: string) => {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Date.now();
  }
};

/**
 * Marks a test file that runs several braid processes against the shared Postgres (each holds its pools): two
 * such files at once would pass the server's max_connections, so on Postgres they take turns, while the
 * other files keep running beside them. A lock whose holder died is taken over.
 */
export function heavyFile(): void {
  if (backend !== 'postgres') return;
  let held = false;
  beforeAll(async () => {
    const until = Date.now() + WAIT_MS;
    for (;;) {
      try {
        mkdirSync(LOCK);
        writeFileSync(join(LOCK, 'pid'), String(process.pid));
        held = true;
        return;
      } catch {
        let holder = NaN;
        try {
          holder = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
        } catch {
          // being written, or being removed: look again
        }
        // a holder that died (or a lock older than any file takes: its pid reused) gives the lock up
        const stale = (Number.isInteger(holder) && holder > 0 && !pidAlive(holder)) || Date.now() - mtime(LOCK) > WAIT_MS;
        if (stale) rmSync(LOCK, { recursive: true, force: true });
      }
      if (Date.now() > until) throw new Error(`another heavy test file has held ${LOCK} for ${WAIT_MS / 60_000} minutes`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, WAIT_MS + 10_000);
  afterAll(() => {
    if (held) rmSync(LOCK, { recursive: true, force: true });
  });
}
