import { Worker as Thread } from 'node:worker_threads';
import type { Logger } from '../telemetry/log.js';
import { threadEntry } from './thread-entry.js';

/** What the liveness thread is started with (cloned into it). */
export interface LivenessData {
  /** How to connect (the database's own settings). */
  settings: Record<string, unknown>;
  /** The schema, as an SQL identifier. */
  s: string;
  workerId: string;
  intervalMs: number;
  stallLimitMs: number;
  deadlineMs: number;
  /** [0]: when the main thread last ran (ms); [1]: when the thread last committed a heartbeat (ms). */
  shared: SharedArrayBuffer;
}

export interface LivenessOptions {
  /** The database's connection settings for another thread; none (the embedded database): no thread. */
  settings: Record<string, unknown> | undefined;
  s: string;
  workerId: string;
  heartbeatIntervalMs: number;
  abandonAfterMs: number;
  stallLimitMs: number;
  log: Logger;
  /** What runs now, for the stall's report. */
  running: () => string[];
}

/** How often the main thread marks that it runs. */
const TICK_MS = 250;

/**
 * Keeps the worker's liveness independent of its main thread's event loop. The main thread marks, every
 * 250 ms, that it runs; a thread of its own (liveness-thread.ts) heartbeats for the worker while those marks
 * stop, up to the stall limit. Each stall of half dead-after or more is reported when the main thread runs again.
 */
export class Liveness {
  private readonly clocks = new BigInt64Array(new SharedArrayBuffer(16));
  private ticker?: NodeJS.Timeout;
  private thread?: Thread;

  constructor(private readonly o: LivenessOptions) {}

  /** When the liveness thread last committed a heartbeat for this worker (0: never). */
  get lastThreadBeat(): number {
    return Number(Atomics.load(this.clocks, 1));
  }

  start(): void {
    Atomics.store(this.clocks, 0, BigInt(Date.now()));
    this.ticker = setInterval(() => this.tick(), TICK_MS);
    this.ticker.unref();
    if (!this.o.settings) return;
    const data: LivenessData = {
      settings: this.o.settings,
      s: this.o.s,
      workerId: this.o.workerId,
      intervalMs: this.o.heartbeatIntervalMs,
      stallLimitMs: this.o.stallLimitMs,
      deadlineMs: Math.max(500, Math.min(2 * this.o.heartbeatIntervalMs, this.o.abandonAfterMs / 2)),
      shared: this.clocks.buffer as SharedArrayBuffer,
    };
    const entry = threadEntry(import.meta.url, 'liveness-thread');
    const thread = new Thread(entry.file, { workerData: data, eval: entry.eval });
    thread.unref();
    thread.on('error', (error) =>
      this.o.log.warn(
        `the liveness thread stopped (${error.message}): a handler blocking the event loop past dead after now lets others take this worker's attempts`,
      ),
    );
    this.thread = thread;
  }

  /** Stops the thread (bounded: terminating a thread does not wait on its database). */
  async stop(): Promise<void> {
    clearInterval(this.ticker);
    const thread = this.thread;
    this.thread = undefined;
    if (thread) await Promise.race([thread.terminate(), new Promise((r) => setTimeout(r, 500).unref())]);
  }

  private tick(): void {
    const now = Date.now();
    const blocked = now - Number(Atomics.load(this.clocks, 0));
    Atomics.store(this.clocks, 0, BigInt(now));
    // a block worth an on-call's attention: half of dead-after (a short one is a GC pause or a busy machine)
    if (blocked < Math.max(1000, this.o.heartbeatIntervalMs, this.o.abandonAfterMs / 2)) return;
    const running = this.o.running();
    const kept = this.thread
      ? this.lastThreadBeat > now - blocked
        ? '; the liveness thread kept this worker alive'
        : ''
      : blocked > this.o.abandonAfterMs
        ? `; past dead after (${seconds(this.o.abandonAfterMs)}) the others may have taken ` +
          `this worker's attempts (the embedded database has no liveness thread)`
        : '';
    if (running.length === 0) {
      // no handler to blame: braid's own work, the embedded database's (it runs on this thread) or a paused process
      this.o.log.info(
        `the event loop was blocked for ${seconds(blocked)} with no handler running (the embedded database runs its queries on ` +
          `this thread; a paused process or an overloaded machine stops it too)${kept}`,
      );
      return;
    }
    const what = ` (running: ${running.slice(0, 3).join(', ')}${running.length > 3 ? `, and ${running.length - 3} more` : ''})`;
    this.o.log.warn(
      `the event loop was blocked for ${seconds(blocked)}${what}: a handler doing synchronous work holds up every other attempt of this worker${kept}`,
    );
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
