import { activateWaits } from '../engine/advance.js';
import { finalizePending } from '../engine/completion.js';
import { lockWorkflows } from '../sql/advance.js';
import { unfinalized } from '../sql/complete.js';
import { strandedConditions } from '../sql/conditions.js';
import { unevaluatedWaits } from '../sql/waits.js';
import { leaderWrite, type MaintenanceContext, type MaintenanceService } from './service.js';

/**
 * Finishes what a crash between a completion and what follows it left: workflows with every task closed but
 * not finalized, waits activated but never evaluated (their timers may be missing too), and conditions never
 * decided.
 */
export class SweeperService implements MaintenanceService {
  readonly name = 'swept';

  constructor(readonly intervalMs: number) {}

  async runOnce(ctx: MaintenanceContext): Promise<number> {
    const { db, s } = ctx;
    const stranded = await unfinalized(db, s);
    if (stranded.length > 0) await leaderWrite(ctx, (tx, advance) => finalizePending(tx, advance, stranded));
    const unevaluated = [...(await unevaluatedWaits(db, s)), ...(await strandedConditions(db, s))];
    const workflows = new Set(unevaluated.map((u) => u.workflow_id));
    for (const id of workflows) {
      await leaderWrite(ctx, async (tx, advance) => {
        await lockWorkflows(tx, s, [id]);
        await activateWaits(
          tx,
          advance,
          id,
          unevaluated.filter((u) => u.workflow_id === id).map((u) => u.name),
        );
      });
    }
    return stranded.length + workflows.size;
  }
}
