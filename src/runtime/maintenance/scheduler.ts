import prettyMs from 'pretty-ms';
import { CoalescedPass } from '../../pacing/coalesced.js';
import { clockNow } from '../core/context.js';
import { fireSchedule } from '../schedules/fire.js';
import { dueSchedules, nextScheduleFire } from '../sql/schedules.js';
import { LeaseLost, type MaintenanceContext, type MaintenanceService, stillLeading } from './service.js';

/** Due schedules read at a time. */
const DUE = 500;
/** Schedules ticked side by side: each tick is a transaction of its own, so a minute of 10,000 due ticks drains in parallel. */
const PARALLEL = 8;
/** A due tick this late (past its poll) means the leader is not keeping up: said once, until it is on time again. */
const LATE_MS = 5000;
/** While schedules miss ticks, the leader says so at most this often. */
const MISSED_WARNING_MS = 60_000;

/**
 * Starts the runs of due schedule ticks (schedules/fire.ts), several schedules at once, each tick in its own
 * transaction under its schedule's row lock, so a second leader or a crash mid-pass can never start one twice
 * (the run's business key holds it too). Fair under overload: each round takes one tick of each due schedule,
 * the longest-waiting first, so a schedule whose ticks keep coming due while the leader is behind cannot hold
 * the others back; a pass ends after its interval's worth of rounds and the next goes on. Ticks passed over
 * (out of a schedule's catch-up window) are counted with it and said at most once a minute. After a pass,
 * `onNext` learns when the soonest schedule fires, so the leader wakes for it rather than wait for its poll.
 */
export class SchedulerService implements MaintenanceService {
  readonly name = 'scheduled';
  private readonly pass = new CoalescedPass<number, MaintenanceContext>((ctx) => this.fire(ctx));
  /** Whether the leader said that ticks start late (and has not said they are on time again). */
  private late = false;
  /** Ticks missed since the leader last said so, and the schedules that missed them. */
  private missed = { ticks: 0, schedules: new Set<string>(), saidAt: Number.NEGATIVE_INFINITY };

  constructor(
    readonly intervalMs: number,
    private readonly onNext: (atMs: number, nowMs: number) => void,
  ) {}

  runOnce(ctx: MaintenanceContext): Promise<number> {
    return this.pass.run(ctx);
  }

  async settled(): Promise<void> {
    await this.pass.settled();
  }

  private async fire(ctx: MaintenanceContext): Promise<number> {
    let started = 0;
    const began = Date.now();
    for (let round = 0; round < 100; round++) {
      const now = await clockNow(ctx);
      const due = await dueSchedules(ctx.db, ctx.s, now, DUE);
      if (round === 0) this.sayLateness(ctx, due, now);
      let next = 0;
      const lane = async () => {
        while (next < due.length && stillLeading(ctx)) {
          const { workflow_name, name } = due[next++];
          // one tick a schedule a round: the others due wait no longer than a round
          const r = await fireSchedule(ctx, workflow_name, name).catch((error: Error) => {
            if (!(error instanceof LeaseLost)) ctx.log.warn(`leader: schedule ${workflow_name}/${name}: ${error.message} (tried again at the next pass)`);
            return { started: 0, missed: 0 };
          });
          started += r.started;
          if (r.missed > 0) {
            this.missed.ticks += r.missed;
            this.missed.schedules.add(`${workflow_name}/${name}`);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL, due.length) }, lane));
      // the rest of what is due waits for the next pass, so the leader's other services get their turn
      if (due.length === 0 || !stillLeading(ctx) || Date.now() - began > Math.max(1000, this.intervalMs)) break;
    }
    const now = await clockNow(ctx);
    this.sayMissed(ctx, now.getTime());
    const at = await nextScheduleFire(ctx.db, ctx.s);
    if (at) this.onNext(at.getTime(), now.getTime());
    return started;
  }

  /** Says, at most once a minute, how many ticks schedules missed since it last said so. */
  private sayMissed(ctx: MaintenanceContext, nowMs: number): void {
    const m = this.missed;
    if (m.ticks === 0 || nowMs - m.saidAt < MISSED_WARNING_MS) return;
    const names = [...m.schedules];
    ctx.log.warn(
      `leader: ${m.ticks} schedule tick(s) missed by ${names.length} schedule(s) (${names.slice(0, 3).join(', ')}${names.length > 3 ? ', ...' : ''}): ` +
        'the leader fell behind and they left their catch-up window, so they never run ' +
        "(braid schedules shows each one's missed ticks; a longer catchup, fewer or less frequent schedules, or a faster database keep up)",
    );
    this.missed = { ticks: 0, schedules: new Set(), saidAt: nowMs };
  }

  /** Says once that due ticks start late (with how late, and how many wait), and once that they are on time again. */
  private sayLateness(ctx: MaintenanceContext, due: readonly { at: Date }[], now: Date): void {
    const lag = due.length > 0 ? now.getTime() - new Date(due[0].at).getTime() : 0;
    const late = lag > Math.max(LATE_MS, 2 * this.intervalMs);
    if (late && !this.late) {
      ctx.log.warn(
        `leader: schedule ticks are starting late: the oldest due tick is ${prettyMs(lag)} past its time, ` +
          `${due.length}${due.length === DUE ? ' or more' : ''} ` +
          "due now (braid schedules shows each one's lateness; fewer or less frequent schedules, or a faster database, catch up)",
      );
    } else if (!late && this.late) ctx.log.info('leader: schedule ticks start on time again');
    this.late = late;
  }
}
