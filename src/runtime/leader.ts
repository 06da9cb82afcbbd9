import type { Database, Queryable } from './db/types.js';
import type { DefinitionCache } from './definition-cache.js';
import type { Logger } from './log.js';
import { unfinalized } from './sql/complete.js';
import { finalizePending } from './completion.js';
import { endAttempt } from './end-attempt.js';
import { electLeader, resignLeader } from './sql/leader.js';
import { deleteExpiredWorkflows, expiredTasks, forgetDeadWorkers, promoteDue, workflowsWithExpiredTasks, type RetentionPolicy } from './sql/maintenance.js';
import { forgetLostClaims, lostAttempts } from './sql/claims.js';
import { currentTime, type Clock } from './sql/time.js';
import { lockWorkflows, notifyQueues, type AdvanceContext } from './sql/advance.js';
import { channels } from './sql/channels.js';
import { fireTimers, nextTimer, unevaluatedWaits, workflowsWithDueTimers } from './sql/waits.js';
import { activateWaits, deleteTasks, evaluateWaits } from './waits.js';
import { applyEffects } from './effects.js';
import { CoalescedPass } from './coalesced.js';
import { errorMessage } from './describe-error.js';

export interface LeaderOptions {
  id: string;
  db: Database;
  schema: string;
  s: string;
  definitions: DefinitionCache;
  clock?: Clock;
  log: Logger;
  /**
   * The longest a dead leader goes unreplaced. The lease lasts 4/5 of it and is renewed every 1/5; others try
   * to take it every 1/5, so a lapsed lease is taken within the whole.
   */
  leaseMs: number;
  /** How often scheduled/retryable tasks are promoted (lateness is bounded by this). */
  promoteIntervalMs: number;
  /** How often due timers are looked for; a NOTIFY from a nearer new timer wakes the leader sooner. */
  timerIntervalMs: number;
  /** A worker silent this long is dead; its running attempts are rescued. */
  workerDeadAfterMs: number;
  retention: RetentionPolicy;
  retentionIntervalMs: number;
}

/**
 * One elected leader runs maintenance for everyone: wait timers, promotion of due tasks, rescue of attempts
 * whose worker died, and retention. Every process runs this service; only the lease holder does the work, and
 * another takes over when the holder stops renewing.
 */
export class LeaderService {
  private leading = false;
  private timers: NodeJS.Timeout[] = [];
  private lastRetention = 0;
  private busy = false;
  private unlisten?: () => Promise<void>;
  /** The pending wake-up for the nearest timer, and when (this process's clock). */
  private wake?: NodeJS.Timeout;
  private wakeAt = Infinity;
  private readonly timerPass = new CoalescedPass(() => this.fireTimerPass());
  private readonly effectPass = new CoalescedPass(() => this.applyEffectPass());

  constructor(private readonly o: LeaderOptions) {}

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

  async start(): Promise<void> {
    const tick = () => void this.tick();
    this.timers.push(setInterval(tick, Math.min(this.electionIntervalMs, this.o.promoteIntervalMs, this.o.timerIntervalMs)));
    for (const t of this.timers) t.unref();
    const unlistenTimers = await this.o.db.listen(channels(this.o.schema).timer, (payload) => {
      const at = Number(payload);
      if (!this.leading || !Number.isFinite(at)) return;
      void currentTime(this.o.db, this.o.clock)
        .then((now) => this.wakeFor(at, now.getTime()))
        .catch(() => undefined);
    });
    const unlistenEffects = await this.o.db.listen(channels(this.o.schema).effect, () => {
      if (this.leading) void this.applyEffects().catch((error: Error) => this.o.log.warn(`leader: effects: ${error.message}`));
    });
    this.unlisten = async () => {
      await unlistenTimers();
      await unlistenEffects();
    };
    tick();
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
      if (this.leading) void this.fireDueTimers().catch((error: Error) => this.o.log.warn(`leader: timers: ${error.message}`));
    }, delay);
    this.wake.unref();
  }

  /**
   * Fires every due timer, one workflow per transaction: under the workflow's lock each timer is marked
   * fired once, and the tasks waiting on it are evaluated. Passes never overlap. Returns how many workflows
   * had timers fired.
   */
  fireDueTimers(): Promise<number> {
    return this.timerPass.run();
  }

  private async fireTimerPass(): Promise<number> {
    const { db, s } = this.o;
    let fired = 0;
    for (;;) {
      const ids = await workflowsWithDueTimers(db, s, await currentTime(db, this.o.clock));
      for (const id of ids) {
        const any = await db.transaction(async (tx) => {
          const ctx = await this.context(tx);
          await lockWorkflows(tx, s, [id]);
          const tasks = await fireTimers(tx, s, id, ctx.now);
          if (tasks.length === 0) return false;
          await evaluateWaits(tx, ctx, id, { names: tasks });
          return true;
        });
        if (any) fired++;
      }
      if (ids.length < 500) break;
    }
    const next = await nextTimer(db, s);
    if (next) this.wakeFor(new Date(next).getTime(), (await currentTime(db, this.o.clock)).getTime());
    return fired;
  }

  private lastElection = 0;
  /** Until when (this process's clock) the lease this process holds is valid. */
  private leaseUntil = 0;

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      // a leader that could not renew stops leading before its lease lapses, so two never lead at once
      if (this.leading && Date.now() >= this.leaseUntil) {
        this.leading = false;
        this.o.log.warn(`${this.o.id} lost the leader lease (it could not be renewed in time)`);
      }
      // (a tenth early: a timer tick that fires a little before the interval must not skip a whole one)
      if (Date.now() - this.lastElection >= this.electionIntervalMs * 0.9) {
        this.lastElection = Date.now();
        const asked = Date.now();
        const now = await currentTime(this.o.db, this.o.clock);
        const was = this.leading;
        this.leading = await electLeader(this.o.db, this.o.s, this.o.id, this.leaseTtlMs, now);
        if (this.leading) this.leaseUntil = asked + this.leaseTtlMs;
        if (this.leading && !was) this.o.log.info(`${this.o.id} is the leader`);
      }
      if (this.leading) await this.runOnce();
    } catch (error) {
      this.o.log.warn(`leader: ${errorMessage(error)}`);
    } finally {
      this.busy = false;
    }
  }

  /**
   * Applies effects that cross workflows (child starts, cancels, finalizations others wait on), each in its
   * own transaction. Passes never overlap.
   */
  applyEffects(): Promise<number> {
    return this.effectPass.run();
  }

  private applyEffectPass(): Promise<number> {
    const { db, s } = this.o;
    return applyEffects(
      db,
      (tx) => this.context(tx),
      s,
      (e, error) => this.o.log.warn(`leader: ${e.kind} effect ${e.id} on workflow ${e.workflow_id} failed (kept, tried again later): ${error.message}`),
    );
  }

  /** What an advancing transaction needs, at the clock's reading through that transaction. */
  private async context(tx: Queryable): Promise<AdvanceContext> {
    return { s: this.o.s, schema: this.o.schema, now: await currentTime(this.o.db, this.o.clock, tx), definitions: this.o.definitions };
  }

  /** One round of maintenance (tests call this directly instead of waiting). */
  async runOnce(options: { retention?: boolean } = {}): Promise<{ promoted: number; rescued: number; deleted: number; timers: number; effects: number }> {
    const { db, s, schema } = this.o;
    const timers = await this.fireDueTimers();
    const effects = await this.applyEffects();
    const now = await currentTime(db, this.o.clock);
    let promoted = 0;
    for (let n = await promoteDue(db, s, schema, now); n > 0; n = n === 1000 ? await promoteDue(db, s, schema, now) : 0) promoted += n;
    const deadBefore = new Date(now.getTime() - this.o.workerDeadAfterMs);
    const lost = await lostAttempts(db, s, deadBefore);
    let rescued = 0;
    for (const a of lost) {
      const message = a.why === 'dead' ? `worker ${a.worker_id} stopped heartbeating while running this attempt` : `worker ${a.worker_id} could not record the end of this attempt`;
      try {
        const ok = await db.transaction(async (tx) =>
          endAttempt(tx, await this.context(tx), { workflowId: a.workflow_id, name: a.name, attempt: a.attempt, workerId: a.worker_id }, { type: 'error', error: { message, kind: 'lost' } }),
        );
        if (ok) rescued++;
      } catch (error) {
        // one attempt that cannot be rescued holds no other back
        this.o.log.warn(`leader: rescuing ${a.workflow_id}/${a.name} failed: ${errorMessage(error)}`);
      }
    }
    if (rescued > 0) this.o.log.info(`rescued ${rescued} attempt(s) from dead workers`);
    // a dead worker's claims go once nothing in them runs for it (all rescued, or ended before it died)
    await forgetLostClaims(db, s, deadBefore);
    const stranded = await unfinalized(db, s);
    if (stranded.length > 0) {
      await db.transaction(async (tx) => finalizePending(tx, await this.context(tx), stranded));
    }
    // waits a crash left activated but never evaluated (their timers may be missing too)
    const unevaluated = await unevaluatedWaits(db, s);
    for (const id of new Set(unevaluated.map((u) => u.workflow_id))) {
      await db.transaction(async (tx) => {
        const ctx = await this.context(tx);
        await lockWorkflows(tx, s, [id]);
        await activateWaits(tx, ctx, id, unevaluated.filter((u) => u.workflow_id === id).map((u) => u.name));
      });
    }
    let deleted = 0;
    if (options.retention || Date.now() - this.lastRetention >= this.o.retentionIntervalMs) {
      this.lastRetention = Date.now();
      deleted = await deleteExpiredWorkflows(db, s, this.o.retention, now);
      if (this.o.retention.taskMs !== null) deleted += await this.deleteExpiredTasks(new Date(now.getTime() - this.o.retention.taskMs));
      await forgetDeadWorkers(db, s, new Date(now.getTime() - 24 * 3_600_000));
    }
    return { promoted, rescued, deleted, timers, effects };
  }

  /** Per-task retention: each running workflow's expired task rows go in one transaction, as deleted deps for their dependents. */
  private async deleteExpiredTasks(cutoff: Date): Promise<number> {
    const { db, s, schema } = this.o;
    let deleted = 0;
    for (const id of await workflowsWithExpiredTasks(db, s, cutoff)) {
      deleted += await db.transaction(async (tx) => {
        const ctx = await this.context(tx);
        const locked = await lockWorkflows(tx, s, [id]);
        if (locked.get(id)?.state !== 'running') return 0;
        const names = await expiredTasks(tx, s, id, cutoff);
        const result = await deleteTasks(tx, ctx, id, names);
        await notifyQueues(tx, schema, result.queues);
        return names.length;
      });
    }
    return deleted;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.wake);
    await this.unlisten?.().catch(() => undefined);
    await this.timerPass.settled();
    await this.effectPass.settled();
    while (this.busy) await new Promise((r) => setTimeout(r, 10));
    if (this.leading) await resignLeader(this.o.db, this.o.s, this.o.id).catch(() => undefined);
    this.leading = false;
  }
}
