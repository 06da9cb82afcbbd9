import { clockNow } from '../context.js';
import { promoteDue } from '../sql/maintenance.js';
import type { MaintenanceContext, MaintenanceService } from './service.js';

const BATCH = 1000;

/** Scheduled and retryable tasks whose time has come become available, in bounded batches (lateness is bounded by the interval). */
export class PromoterService implements MaintenanceService {
  readonly name = 'promoted';

  constructor(readonly intervalMs: number) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    const now = await clockNow(ctx);
    let promoted = 0;
    for (let n = BATCH; n === BATCH; promoted += n) n = await promoteDue(ctx.db, ctx.s, ctx.schema, now, BATCH);
    return promoted;
  }
}
