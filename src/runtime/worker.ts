import { hostname } from 'node:os';
import type { Database } from './db/types.js';
import type { DefinitionCache } from './definition-cache.js';
import { TaskCancelled, TaskSnoozed, type Handler, type Handlers, type TaskContext } from './handlers.js';
import { START_KIND } from '../compiler/normalize.js';
import { runStartTask } from './start.js';
import { channels } from './sql/channels.js';
import { completeTasks, type Completion } from './sql/complete.js';
import { activateCompleted, completeAll, completeAttempt, finalizePending } from './completion.js';
import { endAttempt, releaseLostClaims, releaseTasks } from './end-attempt.js';
import type { AttemptOutcome, AttemptRef } from './sql/attempts.js';
import { fetchTasks, type FetchedTask } from './sql/fetch.js';
import { forgetClaims } from './sql/claims.js';
import { currentTime, type Clock } from './sql/time.js';
import { cancelRequested, heartbeatWorker, registerWorker, stopWorker, type AbandonedAttempt } from './sql/workers.js';
import { isConnectionError, isTransientError } from './db/transient.js';
import { backoffMs, sleep } from './backoff.js';
import { describeError, errorMessage, OutputError } from './describe-error.js';
import { atPointer, findUnstorable } from './storable.js';
import type { PlanTask } from '../compiler/plan.js';
import type { CompileLimits } from '../compiler/instantiate.js';
import type { Logger } from './log.js';
import { advanceContext, Attempt, AttemptContext, attemptRef, ShutdownAbort } from './attempt.js';

export interface WorkerOptions {
  id: string;
  db: Database;
  schema: string;
  s: string;
  definitions: DefinitionCache;
  handlers: Handlers;
  /** Queue name -> concurrency. */
  queues: Record<string, number>;
  /** Tasks per queue claimed beyond the free slots and held here until a slot frees (0: none). */
  prefetch: number;
  clock?: Clock;
  /** Poll fallback when no NOTIFY arrives (default 1000 ms). */
  pollIntervalMs: number;
  heartbeatIntervalMs: number;
  /**
   * An attempt whose end (completion or failure) has failed to commit for this long is listed for the leader
   * to rescue, while this worker keeps trying; whichever commits first wins, the other is a no-op.
   */
  abandonAfterMs: number;
  /** Largest output stored, in bytes of JSON (default 1 MiB). */
  maxOutputBytes: number;
  /** Limits of the compiles start tasks make (children). */
  limits?: Partial<CompileLimits>;
  log: Logger;
}

/** Per queue: handlers running, slots reserved by fetches in flight, fetches in flight, whether work seems to wait (and how many wake-ups said so), the claimed attempts waiting here for a slot (prefetch), and whether a pump is queued. */
interface QueueState {
  active: number;
  reserved: number;
  fetching: number;
  more: boolean;
  wakeups: number;
  buffer: FetchedTask[];
  pumpQueued: boolean;
}

/**
 * How a completion ended: committed; skipped (the attempt was no longer running: timed out, cancelled or
 * rescued); given up (the worker stopped before it could commit); or refused for good (the error: bad data).
 */
type CompletionEnd = 'committed' | 'skipped' | 'gave-up' | { error: unknown };

/** A completion waiting for its batch, or for a retry after its batch failed to reach the database. */
interface PendingCompletion {
  item: Completion;
  task: FetchedTask;
  resolve: (end: CompletionEnd) => void;
  failures: number;
  firstFailureAt?: number;
}

/**
 * One claim's row in `claims`: deleted once none of its attempts is running for this worker. `open` counts
 * attempts not ended yet, `stuck` those whose end did not commit (until the leader rescued them).
 */
interface ClaimTracker {
  id: string;
  open: number;
  stuck: number;
}

/** An attempt listed for rescue; `active` while this worker still tries to record its end. */
interface Abandoned {
  ref: AbandonedAttempt;
  task: FetchedTask;
  active: boolean;
}

/**
 * Runs handlers for its queues: claims available tasks in batches sized to free slots, runs each attempt,
 * and completes attempts in batches (each task's completion, output and dependents' advancement atomic).
 */
export class Worker {
  private readonly running = new Map<string, Attempt>();
  private readonly perQueue = new Map<string, QueueState>();
  /** Completions waiting for the next batch. */
  private queue: PendingCompletion[] = [];
  /** Completions waiting to be tried again, by their timer. */
  private readonly retrying = new Map<NodeJS.Timeout, PendingCompletion[]>();
  /** Completions queued, in a batch in flight, or waiting to be tried again: not yet ended. */
  private uncommitted = 0;
  /** Attempts whose end has not committed for abandonAfterMs (or could not be recorded at all): the heartbeat lists them. */
  private readonly abandoned = new Map<FetchedTask, Abandoned>();
  /** Fetches failed in a row, and until when fetching pauses (the database is unreachable). */
  private fetchFailures = 0;
  private fetchPausedUntil = 0;
  private fetchRetry?: NodeJS.Timeout;
  /** Claims this worker knows it holds (their rows are not deleted yet). */
  private readonly knownClaims = new Set<string>();
  /**
   * When claiming statements failed in transit: one may have committed with its reply lost, leaving tasks
   * running for this worker that it never got. Their claims carry the time the worker sent, so it finds them.
   */
  private uncertainClaims: Date[] = [];
  /** When stopping: after this, ends that keep failing are given up (the leader rescues those attempts). */
  private endsDeadline = Infinity;
  private readonly flushing = new Set<Promise<void>>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** The claim of each claimed attempt, by its task object (one per claim). */
  private readonly claimOf = new WeakMap<FetchedTask, ClaimTracker>();
  /** Claims whose attempts have all ended, deleted with the next fetch (or heartbeat, or stop). */
  private settledClaims: string[] = [];
  private timers: NodeJS.Timeout[] = [];
  private unlisten: (() => Promise<void>)[] = [];
  private stopping = false;
  private started = false;

  constructor(private readonly o: WorkerOptions) {
    this.handlers = o.handlers;
    this.kinds = kindsOf(o.handlers);
    for (const q of Object.keys(o.queues)) this.perQueue.set(q, newQueueState());
  }

  private handlers: Handlers;
  /** The kinds this worker runs: its handlers', and the built-in start handler's. */
  kinds: string[];

  /**
   * Swaps the handlers (hot reload): attempts that start from now on run the new code, running ones finish
   * on the old; the kinds this process runs are recorded again.
   */
  async setHandlers(handlers: Handlers): Promise<void> {
    this.handlers = handlers;
    this.kinds = kindsOf(handlers);
    if (!this.started || this.stopping) return;
    await this.register();
    this.wakeAll();
  }

  /** Every queue may have work: fetch where there is room (a poll, or new handlers). */
  private wakeAll(): void {
    for (const [queue, q] of this.perQueue) this.wake(queue, q);
  }

  /** Work may be waiting in a queue (a notification, a poll): fetch where there is room. */
  private wake(queue: string, q: QueueState): void {
    q.more = true;
    q.wakeups++;
    this.pump(queue);
  }

  /** Serves more queues from now on (a reloaded definition may name a new one); known queues keep their concurrency. */
  async addQueues(queues: Record<string, number>): Promise<void> {
    const added = Object.keys(queues).filter((q) => !this.perQueue.has(q));
    if (added.length === 0) return;
    for (const q of added) {
      this.o.queues[q] = queues[q];
      this.perQueue.set(q, newQueueState());
    }
    if (!this.started || this.stopping) return;
    await this.register();
    for (const q of added) this.pump(q);
  }

  private async register(): Promise<void> {
    const now = await currentTime(this.o.db, this.o.clock);
    await registerWorker(this.o.db, this.o.s, { id: this.o.id, host: hostname(), pid: process.pid, queues: Object.keys(this.o.queues), kinds: this.kinds }, now);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const { db } = this.o;
    await this.register();
    const ch = channels(this.o.schema);
    this.unlisten.push(
      await db.listen(
        ch.available,
        (queue) => {
          const q = this.perQueue.get(queue);
          if (q) this.wake(queue, q);
        },
        () => this.resume(),
      ),
      await db.listen(ch.cancel, (workflowId) => this.cancelled(new Set([workflowId]))),
    );
    this.timers.push(
      setInterval(() => {
        this.wakeAll();
      }, this.o.pollIntervalMs),
      setInterval(() => void this.heartbeat(), this.o.heartbeatIntervalMs),
    );
    for (const t of this.timers) t.unref();
    for (const queue of this.perQueue.keys()) this.pump(queue);
  }

  /** Workflows were cancelled: their running handlers are aborted, their prefetched attempts end cancelled. */
  private cancelled(workflowIds: ReadonlySet<string>): void {
    for (const r of this.running.values()) if (workflowIds.has(r.task.workflow_id)) r.abort(new TaskCancelled('workflow cancelled'));
    for (const q of this.perQueue.values()) {
      const cancelled = q.buffer.filter((t) => workflowIds.has(t.workflow_id));
      if (cancelled.length === 0) continue;
      q.buffer = q.buffer.filter((t) => !workflowIds.has(t.workflow_id));
      for (const t of cancelled) {
        this.track(this.fail(t, attemptRef(t, this.o.id), { type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } }).then((ok) => this.settle(t, ok)));
      }
    }
  }

  /**
   * The notification connection came back after an outage: wake-ups and cancels sent meanwhile were missed,
   * so every queue is looked at and the attempts held here are checked for a cancel.
   */
  private resume(): void {
    if (this.stopping) return;
    this.wakeAll();
    const held = [...this.running.values()].map((r) => r.task).concat([...this.perQueue.values()].flatMap((q) => q.buffer));
    if (held.length === 0) return;
    void cancelRequested(this.o.db, this.o.s, held.map((t) => ({ workflow_id: t.workflow_id, name: t.name })))
      .then((ids) => this.cancelled(new Set(ids)))
      .catch((error: unknown) => this.o.log.warn(`checking held attempts for cancels failed: ${errorMessage(error)}`));
  }

  private async heartbeat(): Promise<void> {
    try {
      const listed = [...this.abandoned.values()];
      const still = await heartbeatWorker(this.o.db, this.o.s, this.o.id, await currentTime(this.o.db, this.o.clock), listed.map((a) => a.ref));
      // those no longer running for this worker ended (committed after all, or rescued): stop listing them
      const running = new Set(still.map((a) => `${a.workflow_id}\u0000${a.name}\u0000${a.attempt}`));
      for (const a of listed) {
        if (running.has(`${a.ref.workflow_id}\u0000${a.ref.name}\u0000${a.ref.attempt}`)) continue;
        this.abandoned.delete(a.task);
        if (!a.active) this.unstick(a.task);
      }
    } catch (error) {
      this.o.log.warn(`heartbeat failed: ${errorMessage(error)}`);
      return;
    }
    await this.releaseUncertainClaims();
    await this.forgetSettledClaims();
  }

  /** Gives back the tasks of claims whose reply was lost (see uncertainClaims): they run again, here or elsewhere. */
  private async releaseUncertainClaims(): Promise<void> {
    if (this.uncertainClaims.length === 0) return;
    const at = this.uncertainClaims;
    this.uncertainClaims = [];
    try {
      const released = await this.o.db.transaction(async (tx) =>
        releaseLostClaims(tx, this.advanceContext(await currentTime(this.o.db, this.o.clock, tx)), this.o.id, at, [...this.knownClaims]),
      );
      if (released > 0) this.o.log.info(`released ${released} task(s) claimed by a statement whose reply was lost`);
    } catch (error) {
      this.uncertainClaims.push(...at);
      this.o.log.warn(`releasing tasks of claims whose reply was lost failed (tried again later): ${errorMessage(error)}`);
    }
  }

  /** Lists an attempt for the leader to rescue (its end has not committed for too long, or cannot be recorded). */
  private abandon(task: FetchedTask, active: boolean): void {
    const known = this.abandoned.get(task);
    if (known) known.active = active;
    else this.abandoned.set(task, { ref: { workflow_id: task.workflow_id, name: task.name, attempt: task.attempt }, task, active });
  }

  /** Records which claim the attempts of a fetch or a completion belong to. */
  private tracked(tasks: FetchedTask[], claim: string | null): FetchedTask[] {
    if (claim !== null && tasks.length > 0) {
      this.knownClaims.add(claim);
      const tracker: ClaimTracker = { id: claim, open: tasks.length, stuck: 0 };
      for (const t of tasks) this.claimOf.set(t, tracker);
    }
    return tasks;
  }

  /** An attempt ended: `committed` says whether its end (completion, failure, release) reached the database. */
  private settle(task: FetchedTask, committed: boolean): void {
    const tracker = this.claimOf.get(task);
    if (!tracker) return;
    tracker.open--;
    // an attempt whose end did not commit still runs for this worker: its claim stays until it is rescued
    if (committed) this.claimOf.delete(task);
    else tracker.stuck++;
    this.claimSettled(tracker);
  }

  /** An attempt whose end did not commit is no longer running for this worker (the leader rescued it). */
  private unstick(task: FetchedTask): void {
    const tracker = this.claimOf.get(task);
    if (!tracker) return;
    this.claimOf.delete(task);
    tracker.stuck--;
    this.claimSettled(tracker);
  }

  private claimSettled(tracker: ClaimTracker): void {
    if (tracker.open === 0 && tracker.stuck === 0) this.settledClaims.push(tracker.id);
  }

  /** Hands the ended claims to a statement that deletes them; they are kept for the next one when it fails. */
  private async withSettledClaims<T>(statement: (ids: string[]) => Promise<T>): Promise<T> {
    const ids = this.settledClaims;
    this.settledClaims = [];
    try {
      const result = await statement(ids);
      for (const id of ids) this.knownClaims.delete(id);
      return result;
    } catch (error) {
      this.settledClaims.push(...ids);
      throw error;
    }
  }

  /** Deletes the ended claims no fetch has carried away. */
  private async forgetSettledClaims(): Promise<void> {
    if (this.settledClaims.length === 0) return;
    await this.withSettledClaims((ids) => forgetClaims(this.o.db, this.o.s, this.o.id, ids)).catch((error: Error) =>
      this.o.log.warn(`deleting ended claims failed (tried again later): ${error.message}`),
    );
  }

  /**
   * Starts prefetched attempts in free slots, then claims work for a queue while it has room and work seems to
   * be there. A fetch reserves the room it asks for, so a second fetch can fill slots freed meanwhile without
   * ever claiming more than the concurrency plus the prefetch.
   */
  private pump(queue: string): void {
    const q = this.perQueue.get(queue)!;
    if (this.stopping) return;
    const concurrency = this.o.queues[queue];
    while (q.active < concurrency && q.buffer.length > 0) this.run(q.buffer.shift()!);
    if (q.fetching >= MAX_FETCHES_IN_FLIGHT || !q.more || this.kinds.length === 0) return;
    // the database failed the last fetch: wait for the backoff's timer rather than spin
    if (Date.now() < this.fetchPausedUntil) return;
    // completions waiting to commit hold back new work, so a slow database is not outrun
    if (this.uncommitted >= MAX_UNCOMMITTED) return;
    const room = concurrency + this.o.prefetch;
    const free = room - q.active - q.reserved - q.buffer.length;
    // small refills wait until a quarter of the room is free, rather than one fetch per freed slot
    if (free <= 0 || ((q.fetching > 0 || q.buffer.length > 0) && free < room / 4)) return;
    q.fetching++;
    q.reserved += free;
    const work = (async () => {
      let failed = false;
      let now: Date | undefined;
      try {
        const wakeups = q.wakeups;
        const at = (now = await currentTime(this.o.db, this.o.clock));
        const fetched = await this.withSettledClaims((forget) => fetchTasks(this.o.db, this.o.s, { queue, kinds: this.kinds, limit: free, workerId: this.o.id, now: at, forget }));
        this.fetchFailures = 0;
        const tasks = this.tracked(fetched.tasks, fetched.claim);
        // a short claim means the queue was drained, unless a wake-up came while the claim was in flight
        q.more = tasks.length === free || q.wakeups !== wakeups;
        if (tasks.length === 0) return;
        if (this.stopping) {
          await this.releaseClaims(tasks);
          return;
        }
        q.buffer.push(...tasks);
      } catch (error) {
        failed = true;
        if (now && isTransientError(error)) this.uncertainClaims.push(now);
        this.fetchFailed(error);
      } finally {
        q.fetching--;
        q.reserved -= free;
      }
      if (!failed) this.pump(queue);
    })();
    this.track(work);
  }

  /** A fetch failed (the database is down or restarting): fetching pauses, longer each time, until one succeeds. */
  private fetchFailed(error: unknown): void {
    this.fetchFailures++;
    const delay = backoffMs(this.fetchFailures, FETCH_BACKOFF);
    this.fetchPausedUntil = Date.now() + delay;
    this.o.log.warn(`fetching tasks failed, backing off: ${errorMessage(error)}`);
    if (this.fetchRetry || this.stopping) return;
    this.fetchRetry = setTimeout(() => {
      this.fetchRetry = undefined;
      this.wakeAll();
    }, delay);
    this.fetchRetry.unref();
  }

  /** Runs one claimed attempt in a slot of its queue. */
  private run(task: FetchedTask): void {
    const q = this.perQueue.get(task.queue)!;
    q.active++;
    const attempt = new Attempt(task, this.o.id);
    this.running.set(attempt.key, attempt);
    void this.execute(attempt, q);
  }

  private track<T>(p: Promise<T>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
  }

  /**
   * The slot is the handler's: it frees when the handler settles, while its completion commits in a batch.
   * Slots freed in the same turn are refilled by one fetch, not one fetch per slot; a freed slot alone does
   * not mean work is waiting (a drained queue stays drained until a wake-up), so a chain does not fetch in vain.
   */
  private releaseSlot(q: QueueState, queue: string): void {
    q.active--;
    if (q.pumpQueued) return;
    q.pumpQueued = true;
    setImmediate(() => {
      q.pumpQueued = false;
      this.pump(queue);
    });
  }

  /**
   * One attempt: the handler with its timeout, then its completion, or its failure. Never throws, and never
   * leaves the attempt running while this worker lives: an end that fails to commit is tried again, and one
   * the database refuses for good (bad data) is recorded as the attempt's error.
   */
  private async execute(attempt: Attempt, q: QueueState): Promise<void> {
    const { task, ref } = attempt;
    let committed = true;
    try {
      let outcome: AttemptOutcome | undefined;
      try {
        let output: unknown;
        try {
          const handler: Handler = task.kind === START_KIND ? (_args, ctx) => this.startChildren(task, ctx) : this.handlers[task.kind];
          output = await attempt.run(handler, new AttemptContext(this.o, attempt));
        } finally {
          this.releaseSlot(q, task.queue);
        }
        const end = await this.persistCompletion(attempt, toJsonOutput(output, this.o.maxOutputBytes));
        if (end === 'committed') this.o.log.taskDone(task, 'completed');
        else if (end === 'skipped') this.o.log.taskDone(task, 'completed, but the attempt was no longer running: result discarded');
        else if (end === 'gave-up') committed = false;
        else outcome = { type: 'error', error: { message: `its output could not be stored: ${errorMessage(end.error)}`, kind: 'output' } };
      } catch (error) {
        if (attempt.tx) await attempt.tx.rollback();
        outcome = outcomeOf(error);
      }
      if (outcome) committed = await this.fail(task, ref, outcome);
    } finally {
      attempt.dispose();
      this.running.delete(attempt.key);
      this.settle(task, committed);
    }
  }

  /** Commits an attempt's completion: in the handler's own transaction, with its extensions, or in a batch. */
  private async persistCompletion(attempt: Attempt, output: unknown): Promise<CompletionEnd> {
    const { task, ref } = attempt;
    if (attempt.tx) {
      // the handler's own writes are in that transaction: when it cannot commit they are gone, and the attempt
      // is an error (it runs again by the retry rules), not a completion to try again
      try {
        await attempt.tx.commit(output, attempt.extensions);
        return 'committed';
      } catch (error) {
        return { error: new Error(`its transaction did not commit (${errorMessage(error)})`) };
      }
    }
    if (attempt.extensions.length > 0) {
      const end = await this.retryEnd(task, () => this.completeExtending(ref, output, attempt.extensions));
      return end === 'done' ? 'committed' : end;
    }
    return this.complete(
      {
        workflowId: task.workflow_id,
        name: task.name,
        attempt: task.attempt,
        workerId: this.o.id,
        output,
        dependents: task.dependents,
        dependentsWait: task.dependents_wait,
        tid: task.tid,
      },
      task,
    );
  }

  /**
   * Runs one attempt's end statement until it commits. Transient failures (connection lost, database
   * restarting, a deadlock) are tried again with capped, jittered backoff; once they last abandonAfterMs the
   * attempt is also listed for the leader to rescue. A permanent failure comes back as its error; when the
   * worker is stopping and past its deadline, the end is given up (the leader rescues the attempt).
   */
  private async retryEnd(task: FetchedTask, statement: () => Promise<void>): Promise<'done' | 'gave-up' | { error: unknown }> {
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
        if (this.stopping && Date.now() >= this.endsDeadline) {
          this.abandon(task, false);
          return 'gave-up';
        }
        await sleep(Math.min(backoffMs(failures, END_BACKOFF), Math.max(0, this.endsDeadline - Date.now())));
      }
    }
  }

  /** Gives prefetched attempts that never started back to the queue, so other workers take them at once. */
  private async releaseClaims(tasks: FetchedTask[]): Promise<void> {
    if (tasks.length === 0) return;
    let committed = true;
    try {
      await this.o.db.transaction(async (tx) => releaseTasks(tx, this.advanceContext(await currentTime(this.o.db, this.o.clock, tx)), tasks.map((t) => attemptRef(t, this.o.id))));
    } catch (error) {
      committed = false;
      this.o.log.warn(`releasing ${tasks.length} prefetched tasks failed (they are rescued later): ${(error as Error).message}`);
    }
    for (const t of tasks) this.settle(t, committed);
  }

  /** A completion that adds tasks: the extension and the completion commit together, outside the batch. */
  private async completeExtending(ref: AttemptRef, output: unknown, extensions: PlanTask[][]): Promise<void> {
    const { db, clock } = this.o;
    await db.transaction(async (tx) => {
      // no longer running (timed out, cancelled or rescued): the extension is rolled back with the completion
      if (!(await completeAttempt(tx, this.advanceContext(await currentTime(db, clock, tx)), ref, output, extensions))) throw new AttemptEnded();
    }).catch((error: unknown) => {
      if (!(error instanceof AttemptEnded)) throw error;
    });
  }

  private startChildren(task: FetchedTask, ctx: TaskContext): Promise<unknown> {
    const { db, s, schema, definitions, clock } = this.o;
    return runStartTask({ db, s, schema, definitions, now: () => currentTime(db, clock), limits: this.o.limits }, task, ctx);
  }

  private advanceContext(now: Date) {
    return advanceContext(this.o, now);
  }

  /** Queues a completion for the next batch; resolves once it ended (see CompletionEnd). */
  private complete(item: Completion, task: FetchedTask): Promise<CompletionEnd> {
    this.uncommitted++;
    return new Promise<CompletionEnd>((resolve) => {
      this.queue.push({ item, task, resolve, failures: 0 });
      this.scheduleFlush();
    });
  }

  /** Up to two batches in flight: one commits while the next gathers (they serialise per workflow in the database). */
  private scheduleFlush(): void {
    if (this.flushing.size >= MAX_FLUSHES_IN_FLIGHT || this.pendingFlush) return;
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

  private pendingFlush = false;

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    if (batch.length === 0) return;
    try {
      const skipped = await this.completeNow(batch.map((p) => p.item));
      for (const p of batch) this.completionEnded(p, skipped.has(p.item) ? 'skipped' : 'committed');
    } catch (error) {
      // the database unreachable: the batch waits as a whole; anything else may be one row's doing (bad data,
      // contention on one workflow), so each is completed alone and only that one fails or waits
      if (isConnectionError(error) || (batch.length === 1 && isTransientError(error))) this.retryCompletions(batch, error);
      else {
        this.o.log.warn(`a batch of ${batch.length} completions failed (${errorMessage(error)}); completing them one by one`);
        for (const p of batch) {
          try {
            const skipped = await this.completeNow([p.item]);
            this.completionEnded(p, skipped.size > 0 ? 'skipped' : 'committed');
          } catch (e) {
            if (isTransientError(e)) this.retryCompletions([p], e);
            else this.completionEnded(p, { error: e });
          }
        }
      }
    }
    for (const queue of this.perQueue.keys()) this.pump(queue);
  }

  private completionEnded(p: PendingCompletion, end: CompletionEnd): void {
    this.uncommitted--;
    if (end !== 'gave-up') this.abandoned.delete(p.task);
    p.resolve(end);
  }

  /**
   * Completions whose batch did not reach the database are tried again after a backoff; those failing for
   * abandonAfterMs are listed for rescue meanwhile, and a stopping worker gives them up at its deadline.
   */
  private retryCompletions(items: PendingCompletion[], error: unknown): void {
    const now = Date.now();
    let failures = 0;
    for (const p of items) {
      p.failures++;
      p.firstFailureAt ??= now;
      failures = Math.max(failures, p.failures);
      if (now - p.firstFailureAt >= this.o.abandonAfterMs) this.abandon(p.task, true);
    }
    this.o.log.warn(`recording completions failed, trying again: ${errorMessage(error)}`);
    if (this.stopping && now >= this.endsDeadline) return this.giveUp(items);
    const timer = setTimeout(() => {
      this.retrying.delete(timer);
      this.queue.unshift(...items);
      this.scheduleFlush();
    }, Math.min(backoffMs(failures, END_BACKOFF), Math.max(0, this.endsDeadline - now)));
    this.retrying.set(timer, items);
  }

  private giveUp(items: PendingCompletion[]): void {
    for (const p of items) {
      this.abandon(p.task, false);
      this.completionEnded(p, 'gave-up');
    }
  }

  /**
   * One statement completes the batch and claims, for this worker's free slots, the dependents it makes
   * available; workflows left to finalize (output templates) follow in a transaction.
   */
  private async completeNow(items: Completion[]): Promise<ReadonlySet<Completion>> {
    const { db, clock } = this.o;
    // reserve no more slots than the batch's dependents could fill, so fetching goes on beside the flush
    let budget = this.stopping ? 0 : new Set(items.flatMap((i) => (i.dependents ?? []).map((d) => `${i.workflowId}\u0000${d}`))).size;
    const slots: Record<string, number> = {};
    for (const [queue, q] of this.perQueue) {
      const take = Math.min(budget, this.o.queues[queue] - q.active - q.reserved - q.buffer.length);
      if (take > 0) {
        slots[queue] = take;
        q.reserved += take;
        budget -= take;
      }
    }
    const claim = { workerId: this.o.id, kinds: this.kinds, slots };
    let result;
    let now: Date | undefined;
    try {
      if (items.some((i) => i.dependentsWait)) {
        // a dependent's wait may become active: evaluate it in the completion's transaction
        result = await db.transaction(async (tx) => completeAll(tx, this.advanceContext((now = await currentTime(db, clock, tx))), items, claim));
      } else {
        now = await currentTime(db, clock);
        result = await completeTasks(db, this.advanceContext(now), items, claim);
      }
    } catch (error) {
      // the dependents it claimed (if it committed) are found by the claim's time
      if (now && Object.keys(slots).length > 0 && isTransientError(error)) this.uncertainClaims.push(now);
      throw error;
    } finally {
      for (const [queue, n] of Object.entries(slots)) this.perQueue.get(queue)!.reserved -= n;
    }
    for (const task of this.tracked(result.claimed, result.claim)) this.run(task);
    const { activated, toFinalize } = result;
    try {
      // activated outside a transaction (a dependent added after this task was claimed): evaluate right after;
      // the leader evaluates any that a crash (or a failure here) leaves behind
      if (activated.size > 0 && !items.some((i) => i.dependentsWait)) {
        await db.transaction(async (tx) => activateCompleted(tx, this.advanceContext(await currentTime(db, clock, tx)), activated, true));
      }
      if (toFinalize.length > 0) await db.transaction(async (tx) => finalizePending(tx, this.advanceContext(await currentTime(db, clock, tx)), toFinalize));
    } catch (error) {
      this.o.log.warn(`advancing after a completion failed (the leader finishes it): ${errorMessage(error)}`);
    }
    return new Set(result.skipped);
  }

  /**
   * Records an attempt's failure (or cancel, snooze, release), tried again while the database is unreachable;
   * one the database refuses for good is recorded once more as a bare error. False when it could not be
   * recorded: the attempt is then listed for the leader to rescue.
   */
  private async fail(task: FetchedTask, ref: AttemptRef, outcome: AttemptOutcome): Promise<boolean> {
    const record = (o: AttemptOutcome) => async () => {
      await this.o.db.transaction(async (tx) => endAttempt(tx, this.advanceContext(await currentTime(this.o.db, this.o.clock, tx)), ref, o));
    };
    let end = await this.retryEnd(task, record(outcome));
    if (typeof end === 'object') {
      const bare: AttemptOutcome = { type: 'error', error: { message: `the attempt failed, and its error could not be recorded (${errorMessage(end.error)})`, kind: 'error' } };
      end = await this.retryEnd(task, record(bare));
    }
    if (end === 'done') {
      this.o.log.taskDone(task, outcome.type === 'error' ? `failed: ${outcome.error.message}` : outcome.type);
      return true;
    }
    if (typeof end === 'object') this.o.log.warn(`recording the end of ${task.workflow_id}/${task.name} failed (the leader rescues it): ${errorMessage(end.error)}`);
    this.abandon(task, false);
    return false;
  }

  /**
   * Graceful stop: no new work; running handlers get until the deadline to finish, then are aborted and
   * their tasks released to run again elsewhere.
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.fetchRetry);
    const until = Date.now() + deadlineMs;
    // ends that keep failing (the database is down) are given up a little after the handlers' deadline
    this.endsDeadline = until + STOP_ENDS_GRACE_MS;
    await this.releaseClaims([...this.perQueue.values()].flatMap((q) => q.buffer.splice(0)));
    while (this.running.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    for (const r of this.running.values()) r.abort(new ShutdownAbort());
    // aborted attempts still record their end (released to run again)
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 5));
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    while (this.flushing.size > 0 || this.retrying.size > 0) {
      if (this.retrying.size > 0 && Date.now() >= this.endsDeadline) {
        for (const [timer, items] of this.retrying) {
          clearTimeout(timer);
          this.giveUp(items);
        }
        this.retrying.clear();
      }
      await Promise.race([Promise.allSettled([...this.flushing]), sleep(20)]);
    }
    for (const u of this.unlisten) await u().catch(() => undefined);
    await this.forgetSettledClaims();
    try {
      await stopWorker(this.o.db, this.o.s, this.o.id, await currentTime(this.o.db, this.o.clock));
    } catch (error) {
      this.o.log.warn(`could not record the worker's stop: ${(error as Error).message}`);
    }
  }

  /** For tests and `--wait`: whether anything is running or queued to complete. */
  get busy(): boolean {
    return this.running.size > 0 || this.uncommitted > 0 || this.inflight.size > 0 || [...this.perQueue.values()].some((q) => q.buffer.length > 0);
  }
}

function newQueueState(): QueueState {
  return { active: 0, reserved: 0, fetching: 0, more: true, wakeups: 0, buffer: [], pumpQueued: false };
}

function kindsOf(handlers: Handlers): string[] {
  return [...Object.keys(handlers), START_KIND].sort();
}

/** Two fetches per queue may be in flight: one refills what the other's handlers freed. */
const MAX_FETCHES_IN_FLIGHT = 2;
const MAX_FLUSHES_IN_FLIGHT = 2;
const MAX_UNCOMMITTED = 1000;
const MAX_BATCH = 500;
/** Fetches wait 100 ms after a failure, doubling to 5 s; ends are tried again sooner (they hold attempts). */
const FETCH_BACKOFF = { initialMs: 100, maxMs: 5000 };
const END_BACKOFF = { initialMs: 50, maxMs: 2000 };
const STOP_ENDS_GRACE_MS = 5000;

/** A completion found its attempt no longer running: the transaction it was in rolls back, and nothing is wrong. */
class AttemptEnded extends Error {}

/** A handler's return value as stored JSON; anything that is not JSON (or too large) is the attempt's error. */
export function toJsonOutput(value: unknown, maxBytes: number): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_, v: unknown) => {
      if (typeof v === 'bigint') throw new TypeError('a BigInt is not JSON');
      if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${v} is not JSON`);
      if (typeof v === 'function' || typeof v === 'symbol') throw new TypeError(`a ${typeof v} is not JSON`);
      return v;
    });
  } catch (error) {
    throw new OutputError(`the handler's output is not JSON: ${errorMessage(error)}`);
  }
  if (text === undefined) throw new OutputError("the handler's output is not JSON");
  if (Buffer.byteLength(text) > maxBytes) throw new OutputError(`the handler's output is ${Buffer.byteLength(text)} bytes of JSON, over the ${maxBytes}-byte limit`);
  const bad = findUnstorable(value, text);
  if (bad) throw new OutputError(`the handler's output holds ${bad.what}${atPointer(bad)}, which Postgres cannot store`);
  return JSON.parse(text);
}

/** Whatever a handler threw (not only Errors) becomes a recorded outcome; reading it never throws. */
function outcomeOf(thrown: unknown): AttemptOutcome {
  try {
    if (thrown instanceof TaskSnoozed) return { type: 'snooze', ms: thrown.ms };
    if (thrown instanceof ShutdownAbort) return { type: 'release', error: { message: thrown.message, kind: 'shutdown' } };
    if (thrown instanceof TaskCancelled) return { type: 'cancel', error: { message: describeError(thrown).message, kind: 'cancel' } };
  } catch {
    // a proxy whose prototype cannot be read: described below like any other thrown value
  }
  return { type: 'error', error: describeError(thrown) };
}

export function workerId(): string {
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}
