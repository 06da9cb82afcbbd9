import { CoalescedPass } from '../../pacing/coalesced.js';
import { clockNow } from '../core/context.js';
import { evaluateWaitsBatch } from '../engine/advance.js';
import { fireTimersMany, nextTimer, workflowsWithDueTimers } from '../sql/waits.js';
import { inBatches } from './batches.js';
import { type MaintenanceContext, type MaintenanceService, stillLeading } from './service.js';

/** Due workflows read at a time. */
const DUE = 2000;

/**
 * Fires due wait timers, many workflows per transaction (batches.ts): under the workflows' locks their timers
 * are marked fired once, in one statement, and the tasks waiting on them are evaluated together
 * (evaluateWaitsBatch). Passes never overlap. After a pass,
 * `onNext` learns when the nearest timer is due (database time), so the leader wakes for it rather than wait.
 */
export class TimerService implements MaintenanceService {
  readonly name = 'timers';
  private readonly pass = new CoalescedPass<number, MaintenanceContext>((ctx) => this.fire(ctx));

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

  /** Returns how many workflows had timers fired. */
  private async fire(ctx: MaintenanceContext): Promise<number> {
    const { db, s } = ctx;
    let fired = 0;
    for (;;) {
      const ids = await workflowsWithDueTimers(db, s, await clockNow(ctx), DUE);
      fired += await inBatches(ctx, ids, 'firing timers', async (tx, advance, batch) =>
        evaluateWaitsBatch(tx, advance, await fireTimersMany(tx, s, batch, advance.now)),
      );
      if (ids.length < DUE || !stillLeading(ctx)) break;
    }
    const next = await nextTimer(db, s);
    if (next) this.onNext(new Date(next).getTime(), (await clockNow(ctx)).getTime());
    return fired;
  }
}
