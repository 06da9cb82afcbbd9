import { readFileSync } from 'node:fs';
import { parseDuration } from '../../compiler/duration.js';
import { DEFAULT_CONCURRENCY, DEFAULT_DEAD_AFTER_MS, DEFAULT_HEARTBEAT_MS, errorMessage, loadHandlers } from '../../runtime/index.js';
import type { RuntimeOptions } from '../../runtime/runtime.js';
import type { Logger } from '../../runtime/telemetry/log.js';
import type { Handlers } from '../../runtime/worker/handlers.js';
import { type Io, UsageError } from '../io.js';
import { handlersModule, project } from '../project.js';

/** A --port value: 0 picks a free port. */
export function parsePort(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`--port must be a port number from 0 to 65535, not "${text}"`);
  return Number(text);
}

/** How often a process npm started checks that npm is still there. */
const PARENT_CHECK_MS = 1000;

/**
 * Resolves with the name of the first SIGINT or SIGTERM. Under npx or npm run, also when npm itself ends: npm 11
 * does not pass a SIGTERM on, so stopping `npx braid worker` would orphan this process, still running.
 */
export function waitForStopSignal(): Promise<string> {
  return new Promise((done) => {
    let watch: NodeJS.Timeout | undefined;
    const stop = (why: string) => {
      clearInterval(watch);
      done(why);
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
    if (process.env.npm_command === undefined) return;
    const parent = process.ppid;
    // npm may run this under a shell that outlives it: npm's own process is watched where it can be found
    const npm = npmAncestor();
    watch = setInterval(() => {
      if (process.ppid !== parent) stop(`the process that started this one under npm (pid ${parent}) ended`);
      else if (npm !== undefined && !running(npm)) stop(`npm (pid ${npm}), which started this process, ended`);
    }, PARENT_CHECK_MS);
    watch.unref();
  });
}

/** The nearest ancestor that is npm (or npx), from /proc; undefined where there is none or no /proc. */
function npmAncestor(): number | undefined {
  let pid = process.ppid;
  for (let depth = 0; depth < 4 && pid > 1; depth++) {
    const cmdline = procText(pid, 'cmdline');
    const stat = procText(pid, 'stat');
    if (cmdline === undefined || stat === undefined) return undefined;
    if (/(^|[/\0\s])(npm|npx)(\s|\0|$|-cli)/.test(cmdline)) return pid;
    pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return undefined;
}

/** Whether a process still runs (a zombie has ended: its parent just has not reaped it). */
function running(pid: number): boolean {
  const stat = procText(pid, 'stat');
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

function procText(pid: number, file: 'cmdline' | 'stat'): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return undefined;
  }
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

export const RECOVERY_OPTIONS = ['heartbeat', 'dead-after', 'stall-limit', 'leader-lease'] as const;

export const recoveryHelp = `  --heartbeat DURATION      how often this worker records that it is alive (default: 2s)
  --dead-after DURATION     a worker silent this long is dead: its tasks run again elsewhere (default: 7s)
  --stall-limit DURATION    how long a handler may block the event loop before the worker counts as hung (default: 5m)
  --leader-lease DURATION   the longest a dead leader goes unreplaced; timers are at most this late (default: 5s)`;

/**
 * --heartbeat, --dead-after, --stall-limit and --leader-lease as runtime options (durations such as 500ms, 2s, 1m), over the
 * config file's `worker` timings; and its `limits`.
 */
export function recoveryOptions(
  io: Io,
  values: Record<string, string | undefined>,
): Pick<RuntimeOptions, 'heartbeatIntervalMs' | 'workerDeadAfterMs' | 'workerStallLimitMs' | 'leaderLeaseMs' | 'limits' | 'lockTimeoutMs' | 'retention'> {
  const read = (flag: (typeof RECOVERY_OPTIONS)[number], min: number): number | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    const ms = parseDuration(text);
    if (ms === undefined || ms < min || ms > 86_400_000)
      throw new UsageError(`--${flag} must be a duration from ${min} ms to 1 day, such as 2s or 500ms, not "${text}"`);
    return ms;
  };
  const { config } = project(io);
  const heartbeatIntervalMs = read('heartbeat', 100) ?? config?.worker.heartbeatMs;
  const workerDeadAfterMs = read('dead-after', 500) ?? config?.worker.deadAfterMs;
  const leaderLeaseMs = read('leader-lease', 500) ?? config?.worker.leaderLeaseMs;
  const workerStallLimitMs = read('stall-limit', 1000) ?? config?.worker.stallLimitMs;
  if ((workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS) <= (heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS)) {
    throw new UsageError('--dead-after must be longer than --heartbeat (a live worker would be taken for dead)');
  }
  const limits = config?.limits;
  return {
    heartbeatIntervalMs,
    workerDeadAfterMs,
    workerStallLimitMs,
    leaderLeaseMs,
    lockTimeoutMs: config?.lockTimeoutMs,
    ...(config?.auditDays !== undefined ? { retention: { auditMs: config.auditDays * 86_400_000 } } : {}),
    limits: limits && Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)),
  };
}

/** --shutdown-timeout SECS, else the config's `worker.shutdown_timeout`, else 10 s: in milliseconds. */
export function shutdownMs(io: Io, secs: string | undefined): number {
  if (secs === undefined) return project(io).config?.worker.shutdownTimeoutMs ?? 10_000;
  const n = Number(secs);
  if (!(n >= 0)) throw new UsageError('--shutdown-timeout must be a number of seconds');
  return n * 1000;
}

/** --queues NAME=N,..., else the config's `queues` (undefined: every queue the registered definitions use). */
export function queuesOption(io: Io, spec: string | undefined): Record<string, number> | undefined {
  return spec === undefined ? project(io).config?.queues : parseQueues(spec);
}

export function parseQueues(spec: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of spec.split(',').filter(Boolean)) {
    const m = /^([A-Za-z0-9_.-]{1,64})(?:=([1-9][0-9]{0,3}))?$/.exec(part.trim());
    if (!m) throw new UsageError(`--queues: "${part}" is not NAME or NAME=CONCURRENCY`);
    out[m[1]] = m[2] ? Number(m[2]) : DEFAULT_CONCURRENCY;
  }
  return out;
}

/** The handlers module a worker loads: --handlers, else the config's `handlers`. */
export function requiredHandlers(io: Io, flag: string | undefined, usage: string): string {
  const path = handlersModule(io, flag);
  if (path === undefined) throw new UsageError(`--handlers MODULE is required, or "handlers" in braid.config.yaml (usage: ${usage})`);
  return path;
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
