import { backoffMs } from '../../pacing/backoff.js';
import { within } from '../../pacing/within.js';
import { advanceAt, advancing, clockNow } from '../core/context.js';
import { errorMessage } from '../core/describe-error.js';
import { braidOutcome } from '../core/privacy.js';
import { isTransientError } from '../db/transient.js';
import { completeBatch } from '../engine/completion.js';
import { channels } from '../sql/channels.js';
import type { Completion } from '../sql/complete.js';
import { type FetchedTask, fetchTasks } from '../sql/fetch.js';
import { checkProtocol } from '../sql/protocol.js';
import { cancelRequested, stopWorker } from '../sql/workers.js';
import { Attempt, attemptRef } from './attempt.js';
import { ClaimLedger } from './claims.js';
import { Completer } from './completer.js';
import { EndRecorder } from './ends.js';
import { Executor, type ExecutorOptions } from './executor.js';
import { type Handlers, handledKinds } from './handlers.js';
import { Heartbeat } from './heartbeat.js';
import { claimStart, newQueueState, type QueueState, reserveSlots } from './queue-state.js';
import { keyIds, register, sayKeysLacking } from './registration.js';
import { FencedAbort, ShutdownAbort, TaskCancelled } from './task-errors.js';
import { TokenWakes } from './token-wakes.js';

export interface WorkerOptions extends ExecutorOptions {
  handlers: Handlers;
  /** Queue name -> concurrency. */
  queues: Record<string, number>;
  /** Tasks per queue claimed beyond the free slots and held here until a slot frees (0: none). */
  prefetch: number;
  /** Poll fallback when no NOTIFY arrives (default 1000 ms). */
  pollIntervalMs: number;
  heartbeatIntervalMs: number;
  /**
   * An attempt whose end (completion or failure) has failed to commit for this long is listed for the leader
   * to rescue, while this worker keeps trying; whichever commits first wins, the other is a no-op.
   */
  abandonAfterMs: number;
  /** How long a handler may block the event loop while the worker is kept alive (then it is taken for hung). */
  stallLimitMs: number;
}

/**
 * Runs handlers for its queues: claims available tasks in batches sized to free slots, runs each attempt,
 * and completes attempts in batches (each task's completion, output and dependents' advancement atomic).
 */
export class Worker {
  private readonly running = new Set<Attempt>();
  private readonly perQueue = new Map<string, QueueState>();
  /** Fetches failed in a row, and until when fetching pauses (the database is unreachable). */
  private fetchFailures = 0;
  private fetchPausedUntil = 0;
  private fetchRetry?: NodeJS.Timeout;
  private readonly tokenWakes = new TokenWakes((queue) => this.wakeQueue(queue));
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly claims: ClaimLedger;
  private readonly ends: EndRecorder;
  private readonly completer: Completer;
  private readonly executor: Executor;
  private timers: NodeJS.Timeout[] = [];
  private unlisten: (() => Promise<void>)[] = [];
  private readonly beat: Heartbeat;
  private stopping = false;
  private started = false;
  /** Who claims: this worker, with the ids of the data keys it has (it claims no task that needs another). */
  private readonly claimant: { workerId: string; keys: string[] };

  constructor(private readonly o: WorkerOptions) {
    this.claimant = { workerId: o.id, keys: keyIds(o) };
    this.handlers = o.handlers;
    this.kinds = handledKinds(o.handlers);
    for (const q of Object.keys(o.queues)) this.perQueue.set(q, newQueueState());
    this.claims = new ClaimLedger(o);
    this.ends = new EndRecorder(o);
    this.completer = new Completer({
      log: o.log,
      ends: this.ends,
      commit: (items) => this.completeNow(items),
      afterBatch: () => {
        for (const queue of this.perQueue.keys()) this.pump(queue);
      },
    });
    this.executor = new Executor(o, this.ends, this.completer);
    this.beat = new Heartbeat({
      ...o,
      claims: this.claims,
      ends: this.ends,
      onLost: () => this.fence(),
      onBack: () => this.wakeAll(),
      running: () => [...this.running].map((r) => `${r.task.kind} of ${r.task.workflow_id}`),
    });
  }

  /** The database is lost (Heartbeat): what this worker claimed is dropped and its handlers aborted, all rescued elsewhere. */
  private fence(): { aborted: number; dropped: number } {
    const dropped = [...this.perQueue.values()].reduce((n, q) => n + q.buffer.splice(0).length, 0);
    const aborted = this.running.size;
    for (const r of this.running) r.abort(new FencedAbort());
    return { aborted, dropped };
  }

  private handlers: Handlers;
  /** The kinds this worker runs: its handlers', and the built-in start handler's. */
  kinds: string[];

  /** Swaps the handlers (hot reload): attempts starting from now run the new code; the kinds it runs are recorded again. */
  async setHandlers(handlers: Handlers): Promise<void> {
    this.handlers = handlers;
    this.kinds = handledKinds(handlers);
    if (!this.started || this.stopping) return;
    await this.register();
    this.wakeAll();
  }

  /**
   * What this worker holds: attempts running or claimed and waiting for a slot, fetches in flight, completions
   * not committed, ends being recorded. Zero when it has nothing in hand (a test's clock may then move on).
   */
  inHand(): number {
    let queued = 0;
    for (const q of this.perQueue.values()) queued += q.buffer.length + q.fetching;
    return this.running.size + queued + this.completer.uncommitted + this.inflight.size;
  }

  /** Every queue may have work: fetch where there is room (a poll, new handlers, or a caller who knows). */
  wakeAll(): void {
    for (const [queue, q] of this.perQueue) this.wake(queue, q);
  }

  /** Work may be waiting in a queue this worker serves (a notification, a rate limit's token): fetch if there is room. */
  private wakeQueue(queue: string): void {
    const q = this.perQueue.get(queue);
    if (q) this.wake(queue, q);
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

  private register(): Promise<void> {
    return register(this.o, this.kinds, this.claimant.keys);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const { db } = this.o;
    await checkProtocol(db, this.o.s);
    await this.register();
    await sayKeysLacking(this.o, this.kinds);
    const ch = channels(this.o.schema);
    this.unlisten.push(
      await db.listen(
        ch.available,
        (queue) => this.wakeQueue(queue),
        () => this.resume(),
      ),
      // "ID" cancels a workflow's attempts, "ID TASK" one task's (an operator's braid task --force)
      await db.listen(ch.cancel, (payload) => this.cancelled(new Set([payload.split(' ')[0]]), payload.split(' ')[1])),
    );
    this.timers.push(setInterval(() => this.wakeAll(), this.o.pollIntervalMs));
    for (const t of this.timers) t.unref();
    this.beat.start();
    for (const queue of this.perQueue.keys()) this.pump(queue);
  }

  /** Workflows (or one task) were cancelled: their running handlers are aborted, their prefetched attempts end cancelled. */
  private cancelled(workflowIds: ReadonlySet<string>, task?: string): void {
    const hit = (t: FetchedTask) => workflowIds.has(t.workflow_id) && (task === undefined || t.name === task);
    for (const r of this.running) if (hit(r.task)) r.abort(new TaskCancelled(task ? 'attempt cancelled' : 'workflow cancelled'));
    for (const q of this.perQueue.values()) {
      const cancelled = q.buffer.filter(hit);
      if (cancelled.length === 0) continue;
      q.buffer = q.buffer.filter((t) => !hit(t));
      for (const t of cancelled) {
        this.track(
          this.executor
            .fail(t, attemptRef(t, this.o.id), braidOutcome({ type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } }))
            .then((ok) => this.claims.ended(t, ok)),
        );
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
    const held = [...this.running].map((r) => r.task).concat([...this.perQueue.values()].flatMap((q) => q.buffer));
    if (held.length === 0) return;
    void cancelRequested(
      this.o.db,
      this.o.s,
      held.map((t) => ({ workflow_id: t.workflow_id, name: t.name })),
    )
      .then((ids) => this.cancelled(new Set(ids)))
      .catch((error: unknown) => this.o.log.warn(`checking held attempts for cancels failed: ${errorMessage(error)}`));
  }

  /**
   * Starts prefetched attempts in free slots, then claims work for a queue while it has room and work seems to
   * be there. A fetch reserves the room it asks for, so a second fetch can fill slots freed meanwhile without
   * ever claiming more than the concurrency plus the prefetch. Tasks with flow control fill free slots only.
   */
  private pump(queue: string): void {
    const q = this.perQueue.get(queue)!;
    if (this.stopping || this.beat.lost) return;
    const concurrency = this.o.queues[queue];
    while (q.active < concurrency && q.buffer.length > 0) void this.run(q.buffer.shift()!);
    if (q.fetching >= MAX_FETCHES_IN_FLIGHT || !q.more || this.kinds.length === 0) return;
    // the database failed the last fetch: wait for the backoff's timer rather than spin
    if (Date.now() < this.fetchPausedUntil) return;
    // completions waiting to commit hold back new work, so a slow database is not outrun
    if (this.completer.uncommitted >= MAX_UNCOMMITTED) return;
    const room = concurrency + this.o.prefetch;
    const free = room - q.active - q.reserved - q.buffer.length;
    const flowFree = Math.max(0, Math.min(free, concurrency - q.active - q.reserved - q.buffer.length));
    // small refills wait until half the room is free, not a fetch per freed slot (a claim's fixed cost is most of a small one's)
    if (free <= 0 || ((q.fetching > 0 || q.buffer.length > 0) && free < room / 2)) return;
    q.fetching++;
    q.reserved += free;
    const work = (async () => {
      let failed = false;
      let now: Date | undefined;
      try {
        const wakeups = q.wakeups;
        const [at, after] = [(now = await clockNow(this.o)), claimStart(q, Date.now())];
        const claim = { ...this.claimant, queue, kinds: this.kinds, limit: free, flowLimit: flowFree, now: at, after };
        const fetched = await this.claims.withSettled((forget) => fetchTasks(this.o.db, this.o.s, { ...claim, forget }));
        q.after = fetched.after;
        this.fetchFailures = 0;
        if (fetched.wakeAt) this.tokenWakes.set(queue, fetched.wakeAt.getTime() - at.getTime());
        const tasks = this.claims.track(fetched.tasks, fetched.claim);
        // a short claim means the queue was drained, unless a wake-up came while the claim was in flight
        q.more = tasks.length === free || q.wakeups !== wakeups || fetched.unplaced;
        // an empty claim still pumps below: a wake-up that came while it was in flight asks for another
        if (tasks.length > 0 && this.stopping) await this.claims.release(tasks, (fn) => advancing(this.o, fn));
        else q.buffer.push(...tasks);
      } catch (error) {
        failed = true;
        if (now && isTransientError(error)) this.claims.uncertain.push(now);
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
    if (!this.beat.lost) this.o.log.warn(`fetching tasks failed, backing off: ${errorMessage(error)}`);
    if (this.fetchRetry || this.stopping) return;
    this.fetchRetry = setTimeout(() => {
      this.fetchRetry = undefined;
      this.wakeAll();
    }, delay);
    this.fetchRetry.unref();
  }

  /** Runs one claimed attempt in a slot of its queue, then its bookkeeping (one promise an attempt). */
  private async run(task: FetchedTask): Promise<void> {
    const q = this.perQueue.get(task.queue)!;
    q.active++;
    const attempt = new Attempt(task, this.o.id);
    this.running.add(attempt);
    let committed = true;
    try {
      committed = await this.executor.execute(attempt, this.handlers, () => this.releaseSlot(q, task.queue));
    } finally {
      attempt.dispose();
      this.running.delete(attempt);
      this.claims.ended(task, committed);
    }
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
   * One statement completes the batch and claims, for this worker's free slots, the dependents it makes
   * available; workflows left to finalize (output templates) follow in a transaction.
   */
  private async completeNow(items: Completion[]): Promise<ReadonlySet<Completion>> {
    // reserve no more slots than the batch's dependents could fill, so fetching goes on beside the flush
    const budget = this.stopping ? 0 : new Set(items.flatMap((i) => (i.dependents ?? []).map((d) => `${i.workflowId}\u0000${d}`))).size;
    const slots = reserveSlots(this.perQueue, this.o.queues, budget);
    const claim = { workerId: this.o.id, kinds: this.kinds, slots };
    let result: Awaited<ReturnType<typeof completeBatch>>;
    let now: Date | undefined;
    try {
      result = await completeBatch(this.o.db, async (tx) => advanceAt(this.o, (now = await clockNow(this.o, tx))), items, claim);
    } catch (error) {
      // the dependents it claimed (if it committed) are found by the claim's time
      if (now && Object.keys(slots).length > 0 && isTransientError(error)) this.claims.uncertain.push(now);
      throw error;
    } finally {
      for (const [queue, n] of Object.entries(slots)) this.perQueue.get(queue)!.reserved -= n;
    }
    for (const task of this.claims.track(result.claimed, result.claim)) void this.run(task);
    await result.followUp().catch((error: unknown) => this.o.log.warn(`advancing after a completion failed (the leader finishes it): ${errorMessage(error)}`));
    return new Set(result.skipped);
  }

  /**
   * Graceful stop: no new work; running handlers get until the deadline to finish, then are aborted and
   * their tasks released to run again elsewhere. Whatever the database does, it returns a bounded while
   * (STOP_GRACE_MS) after that deadline: what could not be recorded by then is rescued by the leader.
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    void this.beat.stop();
    clearTimeout(this.fetchRetry);
    this.tokenWakes.clear();
    const until = Date.now() + deadlineMs;
    const hard = until + STOP_GRACE_MS;
    this.ends.deadline = hard;
    await within(
      hard,
      this.claims.release(
        [...this.perQueue.values()].flatMap((q) => q.buffer.splice(0)),
        (fn) => advancing(this.o, fn),
      ),
    );
    while (this.running.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    for (const r of this.running) r.abort(new ShutdownAbort());
    // aborted attempts still record their end (released to run again)
    const settled = async () => {
      while (this.running.size > 0) await new Promise((r) => setTimeout(r, 5));
      while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
      await this.completer.drain();
      await this.executor.stop();
      for (const u of this.unlisten) await u().catch(() => undefined);
      await this.claims.forgetSettled();
      await stopWorker(this.o.db, this.o.s, this.o.id, await clockNow(this.o));
    };
    try {
      await within(hard, settled());
    } catch (error) {
      this.o.log.warn(`could not record the worker's stop: ${(error as Error).message}`);
    }
  }

  /** For tests and `--wait`: whether anything is running or queued to complete. */
  get busy(): boolean {
    return this.running.size > 0 || this.completer.uncommitted > 0 || this.inflight.size > 0 || [...this.perQueue.values()].some((q) => q.buffer.length > 0);
  }
}

/** Two fetches per queue may be in flight: one refills what the other's handlers freed. */
const MAX_FETCHES_IN_FLIGHT = 2;
const MAX_UNCOMMITTED = 1000;
/** Fetches wait 100 ms after a failure, doubling to 5 s. */
const FETCH_BACKOFF = { initialMs: 100, maxMs: 5000 };
/** How long stopping may go on past the handlers' deadline, recording what ended (runtime.ts STOP_GRACE_MS). */
const STOP_GRACE_MS = 750;
