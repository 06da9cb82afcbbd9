import { advancing, type RuntimeContext } from '../core/context.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { holdsLease } from '../sql/leader.js';

/** The lease a leader's passes run under: its holder and epoch (the fencing token), and whether it still leads. */
export interface LeaseFence {
  holder: string;
  epoch: number;
  leading(): boolean;
  /** How long a fenced transaction may sit idle before the server ends it (Postgres; the embedded database has one session). */
  idleLimitMs?: number;
}

/**
 * What every maintenance service works with: the runtime's context, and the lease when the elected leader
 * runs the pass (a pass run by hand, `maintenance()` and tests, has none and is not fenced).
 */
export interface MaintenanceContext extends RuntimeContext {
  fence?: LeaseFence;
}

/** A leader's write found the lease moved on (another holder, a later epoch): the pass stops, nothing was written. */
export class LeaseLost extends Error {
  constructor(epoch: number) {
    super(`the leader lease of epoch ${epoch} has moved on`);
    this.name = 'LeaseLost';
  }
}

/**
 * A write of a maintenance pass, in a transaction fenced by the lease: its first statement checks that this
 * process still holds the lease in its epoch and share-locks the lease until the transaction ends, so no other
 * process can take the lease while it writes, and a write of an old epoch is refused (LeaseLost).
 */
export function leaderWrite<T>(ctx: MaintenanceContext, fn: (tx: Queryable, advance: AdvanceContext) => Promise<T>): Promise<T> {
  return advancing(ctx, async (tx, advance) => {
    const fence = ctx.fence;
    if (fence && !(await holdsLease(tx, ctx.s, fence.holder, fence.epoch, fence.idleLimitMs))) throw new LeaseLost(fence.epoch);
    return fn(tx, advance);
  });
}

/** Whether a pass should go on to its next batch: a pass by hand always, the leader's while it leads. */
export function stillLeading(ctx: MaintenanceContext): boolean {
  return ctx.fence?.leading() ?? true;
}

/** What a round of maintenance did, by service. */
export type MaintenanceCounts = Record<MaintenanceService['name'], number>;

/**
 * One maintenance job. The leader runs each every `intervalMs` (and all of them when asked for a round);
 * tests call `runOnce` directly rather than wait.
 */
export interface MaintenanceService {
  readonly name: 'timers' | 'timed_out' | 'effects' | 'scheduled' | 'promoted' | 'rescued' | 'swept' | 'flow' | 'deleted' | 'bulk' | 'grouped';
  readonly intervalMs: number;
  /** One pass, now; returns how much it did. */
  runOnce(ctx: MaintenanceContext): Promise<number>;
  /** Waits for a pass in progress (at shutdown). */
  settled?(): Promise<void>;
}
