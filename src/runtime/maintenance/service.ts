import type { RuntimeContext } from '../context.js';

/** What every maintenance service works with: the runtime's context. */
export type MaintenanceContext = RuntimeContext;

/** What a round of maintenance did, by service. */
export type MaintenanceCounts = Record<MaintenanceService['name'], number>;

/**
 * One maintenance job. The leader runs each every `intervalMs` (and all of them when asked for a round);
 * tests call `runOnce` directly rather than wait.
 */
export interface MaintenanceService {
  readonly name: 'timers' | 'timed_out' | 'effects' | 'promoted' | 'rescued' | 'swept' | 'deleted';
  readonly intervalMs: number;
  /** One pass, now; returns how much it did. */
  runOnce(ctx: MaintenanceContext): Promise<number>;
  /** Waits for a pass in progress (at shutdown). */
  settled?(): Promise<void>;
}
