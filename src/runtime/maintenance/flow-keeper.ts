import { clockNow } from '../core/context.js';
import { pruneFlowBookkeeping, unparkMissed } from '../sql/flow.js';
import { leaderWrite, type MaintenanceContext, type MaintenanceService } from './service.js';

/** How often every parked key is looked at, and the flow bookkeeping pruned (by the runtime's clock). */
const FULL_PASS_MS = 60_000;

/**
 * Flow control's upkeep: unparks the tasks whose key freed while a claim held its lock (each pass), and now
 * and then every parked task whose key has room, and drops rate and fair-order rows that limit nothing.
 */
export class FlowKeeperService implements MaintenanceService {
  readonly name = 'flow';
  private lastFull = Number.NEGATIVE_INFINITY;

  constructor(readonly intervalMs: number) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    const now = await clockNow(ctx);
    const full = now.getTime() - this.lastFull >= FULL_PASS_MS || now.getTime() < this.lastFull;
    let done = await leaderWrite(ctx, (tx) => unparkMissed(tx, ctx.s, full));
    if (full) {
      done += await leaderWrite(ctx, (tx) => pruneFlowBookkeeping(tx, ctx.s, now));
      this.lastFull = now.getTime();
    }
    return done;
  }
}
