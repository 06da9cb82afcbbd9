import { clockNow } from '../core/context.js';
import { cancelWorkflow } from '../engine/cancel.js';
import { nextDeadline, pastDeadline } from '../sql/cancel.js';
import { forEachWorkflow } from './batches.js';
import { type MaintenanceContext, type MaintenanceService, stillLeading } from './service.js';

const BATCH = 2000;

/**
 * Workflow timeouts: a running workflow whose deadline passed has its open tasks cancelled and its running
 * handlers asked to stop, many workflows per transaction (batches.ts), and ends failed with reason timeout. Like timers,
 * `onNext` learns the nearest deadline so the leader wakes for it.
 */
export class DeadlineService implements MaintenanceService {
  readonly name = 'timed_out';

  constructor(
    readonly intervalMs: number,
    private readonly onNext: (atMs: number, nowMs: number) => void,
  ) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    let timedOut = 0;
    // a timed-out workflow leaves the query (end_reason is set), so each batch is new ones
    for (;;) {
      const ids = await pastDeadline(ctx.db, ctx.s, await clockNow(ctx), BATCH);
      timedOut += await forEachWorkflow(ctx, ids, 'timing out', async (tx, advance, id) => (await cancelWorkflow(tx, advance, id, 'timeout')).found);
      if (ids.length < BATCH || !stillLeading(ctx)) break;
    }
    const next = await nextDeadline(ctx.db, ctx.s);
    if (next) this.onNext(next.getTime(), (await clockNow(ctx)).getTime());
    return timedOut;
  }
}
