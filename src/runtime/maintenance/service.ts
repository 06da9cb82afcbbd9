import type { Database, Queryable } from '../db/types.js';
import type { Logger } from '../log.js';
import type { AdvanceContext } from '../sql/advance.js';

/** What every maintenance service works with: the leader's database, schema, clock and log. */
export interface MaintenanceContext {
  db: Database;
  /** The schema, quoted for SQL, and as named. */
  s: string;
  schema: string;
  log: Logger;
  /** The clock's reading (through `tx` when given). */
  now(tx?: Queryable): Promise<Date>;
  /** What an advancing transaction needs, at the clock's reading through that transaction. */
  advance(tx: Queryable): Promise<AdvanceContext>;
}

/** What a round of maintenance did, by service. */
export type MaintenanceCounts = Record<MaintenanceService['name'], number>;

/**
 * One maintenance job. The leader runs each every `intervalMs` (and all of them when asked for a round);
 * tests call `runOnce` directly rather than wait.
 */
export interface MaintenanceService {
  readonly name: 'timers' | 'effects' | 'promoted' | 'rescued' | 'swept' | 'deleted';
  readonly intervalMs: number;
  /** One pass, now; returns how much it did. */
  runOnce(ctx: MaintenanceContext): Promise<number>;
  /** Waits for a pass in progress (at shutdown). */
  settled?(): Promise<void>;
}
