import { backoffMs, sleep } from '../../pacing/backoff.js';
import { errorMessage } from '../core/describe-error.js';
import { isTransientError } from '../db/transient.js';
import type { FetchedTask } from '../sql/fetch.js';
import type { AbandonedAttempt } from '../sql/workers.js';
import type { Logger } from '../telemetry/log.js';

/** An attempt listed for rescue; `active` while this worker still tries to record its end. */
export interface Abandoned {
  ref: AbandonedAttempt;
  task: FetchedTask;
  active: boolean;
}

/** Ends are tried again soon after a failure (they hold attempts), doubling from 50 ms to 2 s. */
export const END_BACKOFF = { initialMs: 50, maxMs: 2000 };

/**
 * Recording attempts' ends while the database may be unreachable: each end is tried until it commits; one
 * failing for abandonAfterMs is listed (the heartbeat carries the list) for the leader to rescue, and a
 * stopping worker gives ends up at its deadline.
 */
export class EndRecorder {
  /** Attempts whose end has not committed for abandonAfterMs (or could not be recorded at all). */
  readonly abandoned = new Map<FetchedTask, Abandoned>();
  /** Set when stopping: after this, ends that keep failing are given up (the leader rescues those attempts). */
  deadline = Infinity;

  constructor(readonly o: { abandonAfterMs: number; log: Logger }) {}

  /** Lists an attempt for the leader to rescue (its end has not committed for too long, or cannot be recorded). */
  abandon(task: FetchedTask, active: boolean): void {
    const known = this.abandoned.get(task);
    if (known) known.active = active;
    else this.abandoned.set(task, { ref: { workflow_id: task.workflow_id, name: task.name, attempt: task.attempt }, task, active });
  }

  /** The wait before trying an end again, never past the deadline. */
  delayMs(failures: number, now = Date.now()): number {
    return Math.min(backoffMs(failures, END_BACKOFF), Math.max(0, this.deadline - now));
  }

  /**
   * Runs one attempt's end statement until it commits. Transient failures (connection lost, database
   * restarting, a deadlock) are tried again with capped, jittered backoff; once they last abandonAfterMs the
   * attempt is also listed for the leader to rescue. A permanent failure comes back as its error; past the
   * stop deadline the end is given up (the leader rescues the attempt).
   */
  async retry(task: FetchedTask, statement: () => Promise<void>): Promise<'done' | 'gave-up' | { error: unknown }> {
    const started = Date.now();
    for (let failures = 1; ; failures++) {
      try {
        await statement();
        this.abandoned.delete(task);
        return 'done';
      } catch (error) {
        if (!isTransientError(error)) return { error };
        this.o.log.warn(`recording the end of an attempt failed, trying again: ${errorMessage(error)}`);
        if (Date.now() - started >= this.o.abandonAfterMs) this.abandon(task, true);
        if (Date.now() >= this.deadline) {
          this.abandon(task, false);
          return 'gave-up';
        }
        await sleep(this.delayMs(failures));
      }
    }
  }
}
