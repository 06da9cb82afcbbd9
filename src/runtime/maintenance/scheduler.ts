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

/**
 * Starts the runs of due schedule ticks (schedules/fire.ts), several schedules at once, each tick in its own
 * transaction under its schedule's row lock, so a second leader or a crash mid-pass can never start one twice
 * (the run's business key holds it too). After a pass, `onNext` learns when the soonest schedule fires, so the
 * leader wakes for it rather than wait for its poll.
 */
export class SchedulerService implements MaintenanceService {
  readonly name = 'scheduled';
  private readonly pass = new CoalescedPass<number, MaintenanceContext>((ctx) => this.fire(ctx));
  /** Whether the leader said that ticks start late (and has not said they are on time again). */
  private late = false;

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
    for (let round = 0; round < 100; round++) {
      const now = await clockNow(ctx);
      const due = await dueSchedules(ctx.db, ctx.s, now, DUE);
      if (round === 0) this.sayLateness(ctx, due, now);
      let next = 0;
      const lane = async () => {
        while (next < due.length && stillLeading(ctx)) {
          const { workflow_name, name } = due[next++];
          // awaited before adding: `started += await ...` would read `started` before the other lanes add theirs
          const n = await fireSchedule(ctx, workflow_name, name).catch((error: Error) => {
            if (error instanceof LeaseLost) return 0;
            ctx.log.warn(`leader: schedule ${workflow_name}/${name}: ${error.message} (tried again at the next pass)`);
            return 0;
          });
          started += n;
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL, due.length) }, lane));
      if (due.length < DUE || !stillLeading(ctx)) break;
    }
    const at = await nextScheduleFire(ctx.db, ctx.s);
    if (at) this.onNext(at.getTime(), (await clockNow(ctx)).getTime());
    return started;
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
