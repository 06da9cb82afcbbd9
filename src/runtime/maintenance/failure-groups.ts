import { clockNow } from '../core/context.js';
import { endWindow } from '../engine/failure-hooks.js';
import { anyGroupDue, dueGroups } from '../sql/failures.js';
import { leaderWrite, type MaintenanceContext, type MaintenanceService, stillLeading } from './service.js';

const BATCH = 500;

/**
 * on_failure's grouped hooks: each group whose window has ended starts one run for the failures it counted (and
 * opens its next window), or ends when it counted none. Returns the runs started.
 */
export class FailureGroupService implements MaintenanceService {
  readonly name = 'grouped';

  constructor(readonly intervalMs: number) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    // one read while nothing is due (most passes): no transaction, no lease check
    if (!(await anyGroupDue(ctx.db, ctx.s, await clockNow(ctx)))) return 0;
    let started = 0;
    for (;;) {
      const [seen, runs] = await leaderWrite(ctx, async (tx, advance) => {
        const due = await dueGroups(tx, ctx.s, advance.now, BATCH);
        let n = 0;
        for (const g of due) if (await endWindow(tx, advance, g)) n++;
        return [due.length, n] as const;
      });
      started += runs;
      if (seen < BATCH || !stillLeading(ctx)) return started;
    }
  }
}
