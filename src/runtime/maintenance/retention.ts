import { clockNow } from '../core/context.js';
import { deleteTasks } from '../engine/advance.js';
import { lockWorkflows } from '../sql/advance.js';
import { forgetEvents, forgetReceipts } from '../sql/events.js';
import {
  deleteExpiredWorkflows,
  expiredTasks,
  forgetDeadWorkers,
  forgetOperatorRecords,
  type RetentionPolicy,
  workflowsWithExpiredTasks,
} from '../sql/maintenance.js';
import { leaderWrite, type MaintenanceContext, type MaintenanceService } from './service.js';

/** Workers silent for a day are forgotten (their rows only say what ran where). */
const FORGET_WORKERS_AFTER_MS = 24 * 3_600_000;
/** A finished bulk operation is kept 30 days (its workflows' audit lines say what it did). */
const KEEP_BULK_MS = 30 * 86_400_000;

/**
 * Retention: finalized workflows past their period are deleted as units, and (opt-in) finalized task rows
 * of running workflows, which their dependents then see as deleted deps.
 */
export class RetentionService implements MaintenanceService {
  readonly name = 'deleted';

  constructor(
    readonly intervalMs: number,
    private readonly policy: RetentionPolicy,
  ) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    const now = await clockNow(ctx);
    let deleted = await leaderWrite(ctx, (tx) => deleteExpiredWorkflows(tx, ctx.s, this.policy, now));
    if (this.policy.taskMs !== null) deleted += await this.deleteExpiredTasks(ctx, new Date(now.getTime() - this.policy.taskMs));
    await leaderWrite(ctx, (tx) => forgetDeadWorkers(tx, ctx.s, new Date(now.getTime() - FORGET_WORKERS_AFTER_MS)));
    await leaderWrite(ctx, (tx) => forgetOperatorRecords(tx, ctx.s, new Date(now.getTime() - KEEP_BULK_MS), new Date(now.getTime() - this.policy.auditMs)));
    // the event log is for finding what an event did: a month of it (the runs keep their own retention)
    await leaderWrite(ctx, (tx) => forgetEvents(tx, ctx.s, new Date(now.getTime() - KEEP_BULK_MS)));
    // a webhook's receipt is kept for its signature's window only
    await leaderWrite(ctx, (tx) => forgetReceipts(tx, ctx.s, now));
    return deleted;
  }

  /** Each running workflow's expired task rows go in one transaction, as deleted deps for their dependents. */
  private async deleteExpiredTasks(ctx: MaintenanceContext, cutoff: Date): Promise<number> {
    const { db, s } = ctx;
    let deleted = 0;
    for (const id of await workflowsWithExpiredTasks(db, s, cutoff)) {
      deleted += await leaderWrite(ctx, async (tx, advance) => {
        const locked = await lockWorkflows(tx, s, [id]);
        if (locked.get(id)?.state !== 'running') return 0;
        const names = await expiredTasks(tx, s, id, cutoff);
        await deleteTasks(tx, advance, id, names);
        return names.length;
      });
    }
    return deleted;
  }
}
