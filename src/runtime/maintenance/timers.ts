import { CoalescedPass } from '../coalesced.js';
import { advancing, clockNow } from '../context.js';
import { lockWorkflows } from '../sql/advance.js';
import { fireTimers, nextTimer, workflowsWithDueTimers } from '../sql/waits.js';
import { evaluateWaits } from '../waits/evaluate.js';
import type { MaintenanceContext, MaintenanceService } from './service.js';

/**
 * Fires due wait timers, one workflow per transaction: under the workflow's lock each timer is marked fired
 * once and the tasks waiting on it are evaluated. Passes never overlap. After a pass, `onNext` learns when
 * the nearest timer is due (database time), so the leader wakes for it rather than wait for its interval.
 */
export class TimerService implements MaintenanceService {
  readonly name = 'timers';
  private pass?: CoalescedPass;

  constructor(
    readonly intervalMs: number,
    private readonly onNext: (atMs: number, nowMs: number) => void,
  ) {}

  runOnce(ctx: MaintenanceContext): Promise<number> {
    return (this.pass ??= new CoalescedPass(() => this.fire(ctx))).run();
  }

  async settled(): Promise<void> {
    await this.pass?.settled();
  }

  /** Returns how many workflows had timers fired. */
  private async fire(ctx: MaintenanceContext): Promise<number> {
    const { db, s } = ctx;
    let fired = 0;
    for (;;) {
      const ids = await workflowsWithDueTimers(db, s, await clockNow(ctx));
      for (const id of ids) {
        const any = await advancing(ctx, async (tx, advance) => {
          await lockWorkflows(tx, s, [id]);
          const tasks = await fireTimers(tx, s, id, advance.now);
          if (tasks.length === 0) return false;
          await evaluateWaits(tx, advance, id, { names: tasks });
          return true;
        });
        if (any) fired++;
      }
      if (ids.length < 500) break;
    }
    const next = await nextTimer(db, s);
    if (next) this.onNext(new Date(next).getTime(), (await clockNow(ctx)).getTime());
    return fired;
  }
}
