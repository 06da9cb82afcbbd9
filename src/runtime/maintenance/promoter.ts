import { clockNow } from '../core/context.js';
import { promoteDue } from '../sql/maintenance.js';
import { leaderWrite, type MaintenanceContext, type MaintenanceService, stillLeading } from './service.js';

const BATCH = 1000;

/** Scheduled and retryable tasks whose time has come become available, in bounded batches (lateness is bounded by the interval). */
export class PromoterService implements MaintenanceService {
  readonly name = 'promoted';

  constructor(readonly intervalMs: number) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    const now = await clockNow(ctx);
    let promoted = 0;
    for (let n = BATCH; n === BATCH && stillLeading(ctx); promoted += n) n = await leaderWrite(ctx, (tx) => promoteDue(tx, ctx.s, now, BATCH));
    return promoted;
  }
}
