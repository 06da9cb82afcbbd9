import type { RuntimeContext } from '../core/context.js';
import { advancing, clockNow } from '../core/context.js';
import { errorMessage } from '../core/describe-error.js';
import { isTransientError } from '../db/transient.js';
import { heartbeatWorker } from '../sql/workers.js';
import type { ClaimLedger } from './claims.js';
import type { EndRecorder } from './ends.js';
import { Liveness } from './liveness.js';

export interface HeartbeatOptions extends RuntimeContext {
  id: string;
  heartbeatIntervalMs: number;
  /** A worker silent this long is taken for dead by the others: its attempts are rescued. */
  abandonAfterMs: number;
  claims: ClaimLedger;
  ends: EndRecorder;
  /** No heartbeat has committed for dead-after: stop fetching, abort the running handlers (how many of each). */
  onLost: () => { aborted: number; dropped: number };
  /** A heartbeat committed again after a loss: go back to work. */
  onBack: () => void;
  /** How long the main thread may be blocked while a thread of its own keeps the worker alive. */
  stallLimitMs: number;
  /** What runs now (for the report of a blocked event loop). */
  running: () => string[];
}

/**
 * The worker's heartbeat, and what it tells the worker about the database. Each beat records that the worker
 * lives (and the attempts whose end it could not record); one that cannot commit within dead-after means the
 * others take this worker for dead and run its attempts again, so it must stop too: it says so once, and once
 * more when a beat commits again. Each beat has a deadline shorter than dead-after, so a network that hangs is
 * noticed as surely as one that refuses, and beats never pile up.
 */
export class Heartbeat {
  private timer?: NodeJS.Timeout;
  private beating = false;
  private lastCommit = Date.now();
  /** The database has been out of reach for longer than dead-after. */
  lost = false;

  private readonly liveness: Liveness;

  constructor(private readonly o: HeartbeatOptions) {
    // a virtual clock (tests) has no real time for a thread to keep
    const settings = o.clock ? undefined : o.db.connectionSettings();
    this.liveness = new Liveness({ ...o, settings, workerId: o.id });
  }

  start(): void {
    this.lastCommit = Date.now();
    this.timer = setInterval(() => void this.tick(), this.o.heartbeatIntervalMs);
    this.timer.unref();
    this.liveness.start();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.liveness.stop();
  }

  private async tick(): Promise<void> {
    // the liveness thread's beats count: a main thread that was blocked is not a worker the others took for dead
    const silent = Date.now() - Math.max(this.lastCommit, this.liveness.lastThreadBeat);
    if (!this.lost && silent > this.o.abandonAfterMs) {
      this.lost = true;
      const { aborted, dropped } = this.o.onLost();
      this.o.log.warn(
        `no heartbeat has committed for ${seconds(silent)} (dead after ${seconds(this.o.abandonAfterMs)}): stopping work until the database answers; ` +
          `${aborted} running handler(s) aborted and ${dropped} claimed task(s) dropped, to run again elsewhere`,
      );
    }
    if (this.beating) return;
    this.beating = true;
    try {
      await this.beat();
    } finally {
      this.beating = false;
    }
  }

  private async beat(): Promise<void> {
    const { ends, claims } = this.o;
    try {
      const listed = [...ends.abandoned.values()];
      const deadlineMs = Math.max(500, Math.min(2 * this.o.heartbeatIntervalMs, this.o.abandonAfterMs / 2));
      const still = await heartbeatWorker(
        this.o.db,
        this.o.s,
        this.o.id,
        await clockNow(this.o),
        listed.map((a) => a.ref),
        deadlineMs,
      );
      // those no longer running for this worker ended (committed after all, or rescued): stop listing them
      const running = new Set(still.map((a) => `${a.workflow_id}\u0000${a.name}\u0000${a.attempt}`));
      for (const a of listed) {
        if (running.has(`${a.ref.workflow_id}\u0000${a.ref.name}\u0000${a.ref.attempt}`)) continue;
        ends.abandoned.delete(a.task);
        if (!a.active) claims.unstick(a.task);
      }
    } catch (error) {
      // an unreachable database is said once, when it costs this worker its work (above); anything else, now
      if (!isTransientError(error)) this.o.log.warn(`heartbeat failed: ${errorMessage(error)}`);
      return;
    }
    const silent = Date.now() - this.lastCommit;
    this.lastCommit = Date.now();
    if (this.lost) {
      this.lost = false;
      this.o.log.info(`the database answers again after ${seconds(silent)}: fetching resumes`);
      this.o.onBack();
    }
    await claims.releaseUncertain((fn) => advancing(this.o, fn));
    await claims.forgetSettled();
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
