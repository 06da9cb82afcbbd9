import { within } from '../../pacing/within.js';
import { clockNow, type RuntimeContext } from '../core/context.js';
import { errorMessage } from '../core/describe-error.js';
import { channels } from '../sql/channels.js';
import { electLeader, resignLeader } from '../sql/leader.js';
import type { RetentionPolicy } from '../sql/maintenance.js';
import { BulkService } from './bulk.js';
import { DeadlineService } from './deadlines.js';
import { EffectService } from './effects.js';
import { FailureGroupService } from './failure-groups.js';
import { FlowKeeperService } from './flow-keeper.js';
import { PromoterService } from './promoter.js';
import { RescuerService } from './rescuer.js';
import { RetentionService } from './retention.js';
import { SchedulerService } from './scheduler.js';
import { LeaseLost, type MaintenanceContext, type MaintenanceCounts, type MaintenanceService } from './service.js';
import { SweeperService } from './sweeper.js';
import { TimerService } from './timers.js';

export interface LeaderOptions extends RuntimeContext {
  id: string;
  /**
   * The longest a dead leader goes unreplaced. The lease lasts 4/5 of it and is renewed every 1/5; others try
   * to take it every 1/5, so a lapsed lease is taken within the whole.
   */
  leaseMs: number;
  /** How often scheduled/retryable tasks are promoted, dead workers' attempts rescued and crash leftovers swept. */
  promoteIntervalMs: number;
  /** How often due timers are looked for; a NOTIFY from a nearer new timer wakes the leader sooner. */
  timerIntervalMs: number;
  /** A worker silent this long is dead; its running attempts are rescued. */
  workerDeadAfterMs: number;
  retention: RetentionPolicy;
  retentionIntervalMs: number;
}

/**
 * One elected leader runs maintenance for everyone. Every process runs this service; only the lease holder
 * runs the maintenance services (maintenance/*.ts), each on its interval, and another process takes over when
 * the holder stops renewing. Timers and effects are also run at once when a NOTIFY says there is work.
 *
 * The lease is renewed on a schedule and a connection of its own, whatever the passes are doing; a holder that
 * could not renew stops leading before its lease lapses, so two never lead at once. Each pass writes in bounded
 * batches, each fenced by the lease's epoch (service.ts leaderWrite), and stops between them once it no longer
 * leads.
 */
export class LeaderService {
  private leading = false;
  /** The epoch this process leads in: the fencing token of its writes. */
  private epoch = 0;
  private interval?: NodeJS.Timeout;
  private renewal?: NodeJS.Timeout;
  private electing = false;
  private busy = false;
  private unlisten?: () => Promise<void>;
  /** The pending wake-up for the nearest timer, and when (this process's clock). */
  private wake?: NodeJS.Timeout;
  private wakeAt = Infinity;
  private lastElection = 0;
  /** Until when (this process's clock) the lease this process holds is valid. */
  private leaseUntil = 0;
  /** When each service last ran (this process's clock). */
  private readonly lastRun = new Map<MaintenanceService, number>();
  private readonly timers: TimerService;
  private readonly effects: EffectService;
  private readonly deadlines: DeadlineService;
  private readonly schedules: SchedulerService;
  /** In the order a round runs them. */
  readonly services: readonly MaintenanceService[];

  constructor(private readonly o: LeaderOptions) {
    // timers and effects are also woken by NOTIFY; their polls catch what a missed notification left
    const poll = Math.min(o.timerIntervalMs, o.promoteIntervalMs);
    this.timers = new TimerService(poll, (at, nowMs) => this.wakeFor(at, nowMs));
    this.effects = new EffectService(poll);
    this.deadlines = new DeadlineService(poll, (at, nowMs) => this.wakeFor(at, nowMs));
    this.schedules = new SchedulerService(poll, (at, nowMs) => this.wakeFor(at, nowMs));
    this.services = [
      this.timers,
      this.deadlines,
      // before effects: the run a window's end records is applied in the same round
      new FailureGroupService(poll),
      this.effects,
      this.schedules,
      new PromoterService(o.promoteIntervalMs),
      new RescuerService(o.promoteIntervalMs, o.workerDeadAfterMs),
      new SweeperService(o.promoteIntervalMs),
      new FlowKeeperService(o.promoteIntervalMs),
      new RetentionService(o.retentionIntervalMs, o.retention),
      new BulkService(o.promoteIntervalMs, o.id),
    ];
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Renewal (and candidacy) interval, and how long a lease lasts. */
  private get electionIntervalMs(): number {
    return this.o.leaseMs / 5;
  }

  private get leaseTtlMs(): number {
    return (this.o.leaseMs * 4) / 5;
  }

  /** The context of this leader's passes: fenced by its lease, stopping once it no longer leads. */
  private get fenced(): MaintenanceContext {
    const epoch = this.epoch;
    // a write stalled mid-transaction past the lease's term is ended by the server, so the lease can pass on
    const idleLimitMs = this.o.db.kind === 'postgres' ? this.o.leaseMs : undefined;
    return { ...this.o, fence: { holder: this.o.id, epoch, leading: () => this.leading && this.epoch === epoch, idleLimitMs } };
  }

  async start(): Promise<void> {
    const tick = () => void this.tick();
    this.interval = setInterval(tick, Math.min(...this.services.map((x) => x.intervalMs)));
    this.interval.unref();
    this.renewal = setInterval(() => void this.elect(), this.electionIntervalMs);
    this.renewal.unref();
    const ch = channels(this.o.schema);
    const unlistenTimers = await this.o.db.listen(ch.timer, (payload) => {
      const at = Number(payload);
      if (!this.leading || !Number.isFinite(at)) return;
      void clockNow(this.o)
        .then((now) => this.wakeFor(at, now.getTime()))
        .catch(() => undefined);
    });
    const unlistenEffects = await this.o.db.listen(ch.effect, () => {
      if (this.leading) void this.effects.runOnce(this.fenced).catch((error: Error) => this.passFailed('effects', error));
    });
    this.unlisten = async () => {
      await unlistenTimers();
      await unlistenEffects();
    };
    await this.elect();
    tick();
  }

  /** A pass failed: said, unless it stopped because the lease moved on (the renewal says that once). */
  private passFailed(what: string, error: unknown): void {
    if (!(error instanceof LeaseLost)) this.o.log.warn(`leader: ${what}: ${errorMessage(error)}`);
  }

  /** Fires timers at `atMs` (database time) if that is sooner than the next planned wake-up. */
  private wakeFor(atMs: number, nowMs: number): void {
    const delay = Math.min(Math.max(0, atMs - nowMs), this.o.timerIntervalMs);
    const target = Date.now() + delay;
    if (target >= this.wakeAt) return;
    clearTimeout(this.wake);
    this.wakeAt = target;
    this.wake = setTimeout(() => {
      this.wakeAt = Infinity;
      if (!this.leading) return;
      const ctx = this.fenced;
      void this.timers.runOnce(ctx).catch((error: Error) => this.passFailed('timers', error));
      void this.deadlines.runOnce(ctx).catch((error: Error) => this.passFailed('timeouts', error));
      void this.schedules.runOnce(ctx).catch((error: Error) => this.passFailed('schedules', error));
    }, delay);
    this.wake.unref();
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      if (!this.leading) return;
      const ctx = this.fenced;
      for (const service of this.services) {
        if (!ctx.fence!.leading()) return;
        // (a tenth early: a timer tick that fires a little before the interval must not skip a whole one)
        if (Date.now() - (this.lastRun.get(service) ?? 0) < service.intervalMs * 0.9) continue;
        this.lastRun.set(service, Date.now());
        // one service failing (the database is down) holds no other back
        await service.runOnce(ctx).catch((error: unknown) => this.passFailed(service.name, error));
      }
    } catch (error) {
      this.o.log.warn(`leader: ${errorMessage(error)}`);
    } finally {
      this.busy = false;
    }
  }

  /**
   * Renews the lease (or tries to take it) once per election interval, on the database's dedicated connection
   * and with a deadline, so neither a long pass nor a busy pool delays it.
   */
  private async elect(): Promise<void> {
    // a leader that could not renew stops leading before its lease lapses, so two never lead at once
    if (this.leading && Date.now() >= this.leaseUntil) {
      this.leading = false;
      this.o.log.warn(`${this.o.id} lost the leader lease (it could not be renewed in time)`);
    }
    if (this.electing || Date.now() - this.lastElection < this.electionIntervalMs * 0.9) return;
    this.electing = true;
    this.lastElection = Date.now();
    const asked = Date.now();
    try {
      const was = this.leading;
      const epoch = await electLeader(this.o.db.dedicated(), this.o.s, this.o.id, this.leaseTtlMs, await clockNow(this.o), { deadlineMs: this.leaseTtlMs / 2 });
      this.leading = epoch !== null && asked + this.leaseTtlMs > Date.now();
      if (this.leading) {
        this.epoch = epoch!;
        this.leaseUntil = asked + this.leaseTtlMs;
      }
      if (this.leading && !was) {
        this.o.log.info(`${this.o.id} is the leader (epoch ${epoch})`);
        this.o.metrics?.leaderChanges.inc();
      }
    } catch (error) {
      this.o.log.warn(`leader: renewing the lease failed: ${errorMessage(error)}`);
    } finally {
      this.electing = false;
    }
  }

  /**
   * One round of every service (or of those named), now, whether this process leads or not (tests and
   * `maintenance()` call it).
   */
  async runOnce(only?: readonly MaintenanceService['name'][]): Promise<MaintenanceCounts> {
    const counts = {} as MaintenanceCounts;
    for (const service of this.services) if (!only || only.includes(service.name)) counts[service.name] = await service.runOnce(this.o);
    return counts;
  }

  /**
   * Stops the passes and gives up the lease (so another leader need not wait it out), waiting at most `graceMs`
   * for a pass in flight and the resignation: a database that hangs leaves the lease to expire instead.
   */
  async stop(graceMs = 1500): Promise<void> {
    clearInterval(this.interval);
    clearInterval(this.renewal);
    clearTimeout(this.wake);
    const settled = async () => {
      await this.unlisten?.().catch(() => undefined);
      for (const service of this.services) await service.settled?.();
      while (this.busy) await new Promise((r) => setTimeout(r, 10));
      if (this.leading) {
        const db = this.o.db.dedicated();
        await clockNow(this.o, db)
          .then((now) => resignLeader(db, this.o.s, this.o.id, now, { deadlineMs: graceMs }))
          .catch(() => undefined);
      }
    };
    await within(Date.now() + graceMs, settled());
    this.leading = false;
  }
}
