import { errorMessage } from '../core/describe-error.js';
import type { Database, Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { releaseLostClaims, releaseTasks } from '../engine/end-attempt.js';
import { forgetClaims } from '../sql/claims.js';
import type { FetchedTask } from '../sql/fetch.js';
import type { Logger } from '../telemetry/log.js';
import { attemptRef } from './attempt.js';

/**
 * One claim's row in `claims`: deleted once none of its attempts is running for this worker. `open` counts
 * attempts not ended yet, `stuck` those whose end did not commit (until the leader rescued them).
 */
interface ClaimTracker {
  id: string;
  open: number;
  stuck: number;
}

/** Where a claimed task keeps its claim's tracker: a property of its own (a WeakMap entry per task cost the collector more). */
const CLAIM = Symbol('claim');
type Tracked = FetchedTask & { [CLAIM]?: ClaimTracker };

/**
 * The claims a worker holds: which claim each attempt came in, which claims have ended (their rows are
 * deleted with the next fetch, heartbeat or stop), and when claiming statements failed in transit (one may
 * have committed with its reply lost: its claim carries the time the worker sent, so the worker finds it).
 */
export class ClaimLedger {
  /** Claims this worker knows it holds (their rows are not deleted yet). */
  readonly known = new Set<string>();
  /** Times of claiming statements whose reply was lost. */
  uncertain: Date[] = [];
  private settled: string[] = [];

  constructor(private readonly o: { db: Database; s: string; id: string; log: Logger }) {}

  /** Records which claim the attempts of a fetch or a completion belong to. */
  track(tasks: FetchedTask[], claim: string | null): FetchedTask[] {
    if (claim !== null && tasks.length > 0) {
      this.known.add(claim);
      const tracker: ClaimTracker = { id: claim, open: tasks.length, stuck: 0 };
      for (const t of tasks as Tracked[]) t[CLAIM] = tracker;
    }
    return tasks;
  }

  /** An attempt ended: `committed` says whether its end (completion, failure, release) reached the database. */
  ended(task: Tracked, committed: boolean): void {
    const tracker = task[CLAIM];
    if (!tracker) return;
    tracker.open--;
    // an attempt whose end did not commit still runs for this worker: its claim stays until it is rescued
    if (committed) task[CLAIM] = undefined;
    else tracker.stuck++;
    this.check(tracker);
  }

  /** An attempt whose end did not commit is no longer running for this worker (the leader rescued it). */
  unstick(task: Tracked): void {
    const tracker = task[CLAIM];
    if (!tracker) return;
    task[CLAIM] = undefined;
    tracker.stuck--;
    this.check(tracker);
  }

  private check(tracker: ClaimTracker): void {
    if (tracker.open === 0 && tracker.stuck === 0) this.settled.push(tracker.id);
  }

  /** Hands the ended claims to a statement that deletes them; they are kept for the next one when it fails. */
  async withSettled<T>(statement: (ids: string[]) => Promise<T>): Promise<T> {
    const ids = this.settled;
    this.settled = [];
    try {
      const result = await statement(ids);
      for (const id of ids) this.known.delete(id);
      return result;
    } catch (error) {
      this.settled.push(...ids);
      throw error;
    }
  }

  /** Gives attempts that never started (prefetched, then stopping) back to the queue, so other workers take them at once. */
  async release(tasks: FetchedTask[], transaction: <T>(fn: (tx: Queryable, ctx: AdvanceContext) => Promise<T>) => Promise<T>): Promise<void> {
    if (tasks.length === 0) return;
    let committed = true;
    try {
      await transaction((tx, ctx) =>
        releaseTasks(
          tx,
          ctx,
          tasks.map((t) => attemptRef(t, this.o.id)),
        ),
      );
    } catch (error) {
      committed = false;
      this.o.log.warn(`releasing ${tasks.length} prefetched tasks failed (they are rescued later): ${errorMessage(error)}`);
    }
    for (const t of tasks) this.ended(t, committed);
  }

  /** Gives back the tasks of claims whose reply was lost: they run again, here or elsewhere. */
  async releaseUncertain(transaction: <T>(fn: (tx: Queryable, ctx: AdvanceContext) => Promise<T>) => Promise<T>): Promise<void> {
    if (this.uncertain.length === 0) return;
    const at = this.uncertain;
    this.uncertain = [];
    try {
      const released = await transaction((tx, ctx) => releaseLostClaims(tx, ctx, this.o.id, at, [...this.known]));
      if (released > 0) this.o.log.info(`released ${released} task(s) claimed by a statement whose reply was lost`);
    } catch (error) {
      this.uncertain.push(...at);
      this.o.log.warn(`releasing tasks of claims whose reply was lost failed (tried again later): ${errorMessage(error)}`);
    }
  }

  /** Deletes the ended claims no fetch has carried away. */
  async forgetSettled(): Promise<void> {
    if (this.settled.length === 0) return;
    await this.withSettled((ids) => forgetClaims(this.o.db, this.o.s, this.o.id, ids)).catch((error: Error) =>
      this.o.log.warn(`deleting ended claims failed (tried again later): ${error.message}`),
    );
  }
}
