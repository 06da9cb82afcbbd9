import { sleep } from '../../pacing/backoff.js';
import { errorMessage } from '../core/describe-error.js';
import { isConnectionError, isTransientError } from '../db/transient.js';
import type { Completion } from '../sql/complete.js';
import type { FetchedTask } from '../sql/fetch.js';
import type { Logger } from '../telemetry/log.js';
import type { EndRecorder } from './ends.js';

/**
 * How a completion ended: committed; skipped (the attempt was no longer running: timed out, cancelled or
 * rescued); given up (the worker stopped before it could commit); or refused for good (the error: bad data).
 */
export type CompletionEnd = 'committed' | 'skipped' | 'gave-up' | { error: unknown };

/** A completion waiting for its batch, or for a retry after its batch failed to reach the database. */
interface PendingCompletion {
  item: Completion;
  task: FetchedTask;
  resolve: (end: CompletionEnd) => void;
  failures: number;
  firstFailureAt?: number;
}

/**
 * One batch in flight while the next gathers: batches grow to what completed meanwhile (the statement's fixed
 * cost is most of a small batch's). A second may fly when the queue holds a completion with dependents, so a
 * chain's next task does not wait for another batch's commit.
 */
const MAX_FLUSHES_IN_FLIGHT = 1;
const MAX_FLUSHES_WITH_DEPENDENTS = 2;
const MAX_BATCH = 1000;

/**
 * Batches completions: each waits for the next batch, which `commit` completes in one statement; a batch that
 * cannot reach the database waits whole and is tried again, and one failing for another reason is completed
 * one by one, so only the completion at fault fails.
 */
export class Completer {
  private queue: PendingCompletion[] = [];
  /** Completions waiting to be tried again, by their timer. */
  private readonly retrying = new Map<NodeJS.Timeout, PendingCompletion[]>();
  private readonly flushing = new Set<Promise<void>>();
  private pendingFlush = false;
  /** Queued completions that have dependents. */
  private queuedWithDependents = 0;
  /** Completions queued, in a batch in flight, or waiting to be tried again: not yet ended. */
  uncommitted = 0;

  constructor(
    private readonly o: {
      log: Logger;
      ends: EndRecorder;
      /** Completes a batch; returns the completions that were skipped (their attempt no longer running). */
      commit: (items: Completion[]) => Promise<ReadonlySet<Completion>>;
      /** After each batch: slots and claims may have changed. */
      afterBatch: () => void;
    },
  ) {}

  /** Queues a completion for the next batch; resolves once it ended (see CompletionEnd). */
  complete(item: Completion, task: FetchedTask): Promise<CompletionEnd> {
    this.uncommitted++;
    return new Promise<CompletionEnd>((resolve) => {
      this.queue.push({ item, task, resolve, failures: 0 });
      if (hasDependents(item)) this.queuedWithDependents++;
      this.scheduleFlush();
    });
  }

  /** Waits for every batch and retry to end; retries still failing at the ends deadline are given up. */
  async drain(): Promise<void> {
    while (this.flushing.size > 0 || this.retrying.size > 0) {
      if (this.retrying.size > 0 && Date.now() >= this.o.ends.deadline) {
        for (const [timer, items] of this.retrying) {
          clearTimeout(timer);
          this.giveUp(items);
        }
        this.retrying.clear();
      }
      await Promise.race([Promise.allSettled([...this.flushing]), sleep(20)]);
    }
  }

  /** A batch in flight while the next gathers (batches serialise per workflow in the database). */
  private scheduleFlush(): void {
    if (this.pendingFlush) return;
    if (this.flushing.size >= MAX_FLUSHES_WITH_DEPENDENTS) return;
    if (this.flushing.size >= MAX_FLUSHES_IN_FLIGHT && this.queuedWithDependents === 0) return;
    this.pendingFlush = true;
    const flush: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => {
        this.pendingFlush = false;
        return this.flush();
      })
      .finally(() => {
        this.flushing.delete(flush);
        if (this.queue.length > 0) this.scheduleFlush();
      });
    this.flushing.add(flush);
  }

  private async flush(): Promise<void> {
    // a large output goes alone, so its text is sent as is (sql/complete.ts)
    const alone = this.queue.findIndex((p) => p.item.outputText !== undefined);
    const batch = alone === -1 ? this.queue.splice(0, MAX_BATCH) : alone === 0 ? this.queue.splice(0, 1) : this.queue.splice(0, alone);
    if (batch.length === 0) return;
    for (const p of batch) if (hasDependents(p.item)) this.queuedWithDependents--;
    try {
      const skipped = await this.o.commit(batch.map((p) => p.item));
      for (const p of batch) this.ended(p, skipped.has(p.item) ? 'skipped' : 'committed');
    } catch (error) {
      // the database unreachable: the batch waits as a whole; anything else may be one row's doing (bad data,
      // contention on one workflow), so each is completed alone and only that one fails or waits
      if (isConnectionError(error) || (batch.length === 1 && isTransientError(error))) this.retry(batch, error);
      else {
        this.o.log.warn(`a batch of ${batch.length} completions failed (${errorMessage(error)}); completing them one by one`);
        for (const p of batch) {
          try {
            const skipped = await this.o.commit([p.item]);
            this.ended(p, skipped.size > 0 ? 'skipped' : 'committed');
          } catch (e) {
            if (isTransientError(e)) this.retry([p], e);
            else this.ended(p, { error: e });
          }
        }
      }
    }
    this.o.afterBatch();
  }

  private ended(p: PendingCompletion, end: CompletionEnd): void {
    this.uncommitted--;
    if (end !== 'gave-up') this.o.ends.abandoned.delete(p.task);
    p.resolve(end);
  }

  /**
   * Completions whose batch did not reach the database are tried again after a backoff; those failing for
   * abandonAfterMs are listed for rescue meanwhile, and a stopping worker gives them up at its deadline.
   */
  private retry(items: PendingCompletion[], error: unknown): void {
    const now = Date.now();
    let failures = 0;
    for (const p of items) {
      p.failures++;
      p.firstFailureAt ??= now;
      failures = Math.max(failures, p.failures);
      if (now - p.firstFailureAt >= this.o.ends.o.abandonAfterMs) this.o.ends.abandon(p.task, true);
    }
    this.o.log.warn(`recording completions failed, trying again: ${errorMessage(error)}`);
    if (now >= this.o.ends.deadline) {
      this.giveUp(items);
      return;
    }
    const timer = setTimeout(
      () => {
        this.retrying.delete(timer);
        this.queue.unshift(...items);
        for (const p of items) if (hasDependents(p.item)) this.queuedWithDependents++;
        this.scheduleFlush();
      },
      this.o.ends.delayMs(failures, now),
    );
    this.retrying.set(timer, items);
  }

  private giveUp(items: PendingCompletion[]): void {
    for (const p of items) {
      this.o.ends.abandon(p.task, false);
      this.ended(p, 'gave-up');
    }
  }
}

function hasDependents(item: Completion): boolean {
  return (item.dependents?.length ?? 0) > 0;
}
