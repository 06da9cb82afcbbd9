import { clockNow } from '../core/context.js';
import { errorMessage } from '../core/describe-error.js';
import { braidOutcome } from '../core/privacy.js';
import { endAttempt } from '../engine/end-attempt.js';
import { lockWorkflows } from '../sql/advance.js';
import { deadRangesWorkflows, forgetLostClaims, lostAttempts } from '../sql/claims.js';
import { LeaseLost, leaderWrite, type MaintenanceContext, type MaintenanceService } from './service.js';

/**
 * Rescues attempts whose worker died (silent for `deadAfterMs`) or listed them as unrecordable: each ends as
 * a lost attempt, which runs again at once by the retry rules (a dead worker's running ranges are given rows
 * first). A dead worker's claims go once nothing in them runs for it.
 */
export class RescuerService implements MaintenanceService {
  readonly name = 'rescued';

  constructor(
    readonly intervalMs: number,
    private readonly deadAfterMs: number,
  ) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    const { db, s } = ctx;
    const deadBefore = new Date((await clockNow(ctx)).getTime() - this.deadAfterMs);
    let rescued = 0;
    // a dead worker's running ranges first get rows (their workflows' lock gives them), where its claims find them
    const ranged = await deadRangesWorkflows(db, s, deadBefore);
    if (ranged.length > 0) await leaderWrite(ctx, (tx) => lockWorkflows(tx, s, ranged));
    for (const a of await lostAttempts(db, s, deadBefore)) {
      const message =
        a.why === 'dead'
          ? `worker ${a.worker_id} stopped heartbeating while running this attempt`
          : `worker ${a.worker_id} could not record the end of this attempt`;
      try {
        const ref = { workflowId: a.workflow_id, name: a.name, attempt: a.attempt, workerId: a.worker_id };
        if (await leaderWrite(ctx, (tx, advance) => endAttempt(tx, advance, ref, braidOutcome({ type: 'error', error: { message, kind: 'lost' } })))) rescued++;
      } catch (error) {
        if (error instanceof LeaseLost) throw error;
        // one attempt that cannot be rescued holds no other back
        ctx.log.warn(`leader: rescuing ${a.workflow_id}/${a.name} failed: ${errorMessage(error)}`);
      }
    }
    if (rescued > 0) {
      ctx.log.info(`rescued ${rescued} attempt(s) from dead workers`);
      ctx.metrics?.rescues.inc({}, rescued);
    }
    await leaderWrite(ctx, (tx) => forgetLostClaims(tx, s, deadBefore));
    return rescued;
  }
}
