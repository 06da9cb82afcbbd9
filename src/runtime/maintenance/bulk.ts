import { continueOrphaned } from '../incidents/bulk-run.js';
import type { MaintenanceContext, MaintenanceService } from './service.js';

/**
 * Continues bulk operations whose runner went silent (a `braid bulk` killed mid-way, a server stopped): about a
 * second of each one's items a pass, at its rate, so the leader's other passes are never held long.
 */
export class BulkService implements MaintenanceService {
  readonly name = 'bulk';

  constructor(
    readonly intervalMs: number,
    private readonly runner: string,
  ) {}

  runOnce(ctx: MaintenanceContext): Promise<number> {
    return continueOrphaned(ctx, this.runner);
  }
}
