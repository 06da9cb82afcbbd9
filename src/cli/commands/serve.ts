import { parseDuration } from '../../compiler/duration.js';
import { errorMessage } from '../../runtime/describe-error.js';
import type { Handlers } from '../../runtime/handlers.js';
import type { Logger } from '../../runtime/log.js';
import { DEFAULT_DEAD_AFTER_MS, DEFAULT_HEARTBEAT_MS } from '../../runtime/runtime.js';
import { loadHandlers } from '../../runtime/load-handlers.js';
import { UsageError } from '../io.js';

/** A --port value: 0 picks a free port. */
export function parsePort(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`--port must be a port number from 0 to 65535, not "${text}"`);
  return Number(text);
}

/** Resolves with the name of the first SIGINT or SIGTERM. */
export function waitForStopSignal(): Promise<string> {
  return new Promise((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
}

/** A handlers module given on the command line: one clear usage error when it cannot be loaded. */
export async function loadHandlersArg(path: string): Promise<Handlers> {
  try {
    return await loadHandlers(path);
  } catch (error) {
    throw new UsageError(`cannot load handlers: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** Starts a server on --port, turning a port already taken into a usage error. */
export async function listenOn<T>(port: number, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new UsageError(`port ${port} is in use: pass --port N (0 picks a free one)`);
    throw error;
  }
}

export const RECOVERY_OPTIONS = ['heartbeat', 'dead-after', 'leader-lease'] as const;

export const recoveryHelp = `  --heartbeat DURATION      how often this worker records that it is alive (default: 2s)
  --dead-after DURATION     a worker silent this long is dead: its tasks run again elsewhere (default: 7s)
  --leader-lease DURATION   the longest a dead leader goes unreplaced; timers are at most this late (default: 5s)`;

/** --heartbeat, --dead-after and --leader-lease as runtime options (durations such as 500ms, 2s, 1m). */
export function recoveryOptions(values: Record<string, string | undefined>): { heartbeatIntervalMs?: number; workerDeadAfterMs?: number; leaderLeaseMs?: number } {
  const read = (flag: (typeof RECOVERY_OPTIONS)[number], min: number): number | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    const ms = parseDuration(text);
    if (ms === undefined || ms < min || ms > 86_400_000) throw new UsageError(`--${flag} must be a duration from ${min} ms to 1 day, such as 2s or 500ms, not "${text}"`);
    return ms;
  };
  const heartbeatIntervalMs = read('heartbeat', 100);
  const workerDeadAfterMs = read('dead-after', 500);
  const leaderLeaseMs = read('leader-lease', 500);
  if ((workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS) <= (heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS)) {
    throw new UsageError('--dead-after must be longer than --heartbeat (a live worker would be taken for dead)');
  }
  return { heartbeatIntervalMs, workerDeadAfterMs, leaderLeaseMs };
}

/**
 * A handler's promise that nobody awaits must not take the worker down (Node's default for an unhandled
 * rejection is to exit): it is logged, and the process carries on. Returns the undo.
 */
export function surviveUnhandledRejections(log: Logger): () => void {
  const onRejection = (reason: unknown) => log.warn(`unhandled promise rejection (a handler's promise that nothing awaited?): ${errorMessage(reason)}`);
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}
