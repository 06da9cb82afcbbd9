import type { FetchedTask } from '../sql/fetch.js';

/** Where the runtime reports what happens; `braid worker` prints a line per event, tests stay quiet. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  taskDone(task: Pick<FetchedTask, 'workflow_id' | 'name' | 'attempt' | 'kind'>, outcome: string): void;
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, taskDone: () => undefined };

export function consoleLogger(write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Logger {
  const stamp = () => new Date().toISOString().slice(11, 23);
  return {
    info: (m) => write(`${stamp()} ${m}`),
    warn: (m) => write(`${stamp()} warning: ${m}`),
    taskDone: (t, outcome) => write(`${stamp()} ${t.workflow_id} ${t.name} (${t.kind}, attempt ${t.attempt}): ${outcome}`),
  };
}

/**
 * The same warning repeated (a database that is down fails every fetch, heartbeat and election alike) is
 * written once per window; its next occurrence after the window says how many were left out.
 */
export function rateLimitedWarnings(log: Logger, windowMs = 10_000, now: () => number = Date.now): Logger {
  const seen = new Map<string, { at: number; suppressed: number }>();
  return {
    info: (m) => log.info(m),
    taskDone: (t, outcome) => log.taskDone(t, outcome),
    warn(message) {
      const t = now();
      const last = seen.get(message);
      if (last && t - last.at < windowMs) {
        last.suppressed++;
        return;
      }
      if (seen.size > 1000) for (const [m, v] of seen) if (t - v.at >= windowMs) seen.delete(m);
      seen.set(message, { at: t, suppressed: 0 });
      log.warn(last && last.suppressed > 0 ? `${message} (and ${last.suppressed} more like it in the last ${Math.round((t - last.at) / 1000)} s)` : message);
    },
  };
}
