import { hostname } from 'node:os';
import type { Database } from './db/types.js';
import type { DefinitionCache } from './definition-cache.js';
import { TaskCancelled, TaskSnoozed, TaskTimeout, type Handler, type Handlers, type TaskContext } from './handlers.js';
import { START_KIND } from '../compiler/normalize.js';
import { runStartTask } from './start.js';
import { channels } from './sql/channels.js';
import { activateCompleted, completeTasks, finalizePending, type Completion } from './sql/complete.js';
import { endAttempt, releaseTasks, type AttemptOutcome, type AttemptRef, type TaskError } from './sql/fail.js';
import { fetchTasks, type FetchedTask } from './sql/fetch.js';
import { forgetClaims } from './sql/claims.js';
import { lockWorkflows } from './sql/advance.js';
import { currentTime, type Clock } from './sql/time.js';
import { heartbeatWorker, registerWorker, stopWorker } from './sql/workers.js';
import { applyExtension } from './extend.js';
import type { PlanTask } from '../compiler/plan.js';
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
  /** Largest output stored, in bytes of JSON (default 1 MiB). */
  maxOutputBytes: number;
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

/** Completions that commit in one statement; every attempt in it waits on the one promise, which gives the ones that failed to commit. */
interface CompletionBatch {
  items: Completion[];
  committed: Promise<ReadonlySet<Completion>>;
  resolve: (failed: ReadonlySet<Completion>) => void;
}

/** One claim's row in `claims`: deleted once each of its attempts has ended, unless one's end failed to commit (it stays running, rescued when this worker is gone). */
interface ClaimTracker {
  id: string;
  open: number;
  stuck: boolean;
}

/**
 * Runs handlers for its queues: claims available tasks in batches sized to free slots, runs each attempt,
 * and completes attempts in batches (each task's completion, output and dependents' advancement atomic).
 */
export class Worker {
  private readonly running = new Map<string, Attempt>();
  private readonly perQueue = new Map<string, QueueState>();
  private readonly batches: CompletionBatch[] = [];
  /** Completions queued or in a batch in flight, not yet committed. */
  private uncommitted = 0;
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
      await db.listen(ch.available, (queue) => {
        const q = this.perQueue.get(queue);
        if (q) this.wake(queue, q);
      }),
      await db.listen(ch.cancel, (workflowId) => {
        for (const r of this.running.values()) if (r.task.workflow_id === workflowId) r.abort(new TaskCancelled('workflow cancelled'));
        for (const q of this.perQueue.values()) {
          const cancelled = q.buffer.filter((t) => t.workflow_id === workflowId);
          if (cancelled.length === 0) continue;
          q.buffer = q.buffer.filter((t) => t.workflow_id !== workflowId);
          for (const t of cancelled) {
            this.track(this.fail(t, attemptRef(t, this.o.id), { type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } }).then((ok) => this.settle(t, ok)));
          }
        }
      }),
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

  private async heartbeat(): Promise<void> {
    try {
      await heartbeatWorker(this.o.db, this.o.s, this.o.id, await currentTime(this.o.db, this.o.clock));
    } catch (error) {
      this.o.log.warn(`heartbeat failed: ${(error as Error).message}`);
    }
    await this.forgetSettledClaims();
  }

  /** Records which claim the attempts of a fetch or a completion belong to. */
  private tracked(tasks: FetchedTask[], claim: string | null): FetchedTask[] {
    if (claim !== null && tasks.length > 0) {
      const tracker: ClaimTracker = { id: claim, open: tasks.length, stuck: false };
      for (const t of tasks) this.claimOf.set(t, tracker);
    }
    return tasks;
  }

  /** An attempt ended: `committed` says whether its end (completion, failure, release) reached the database. */
  private settle(task: FetchedTask, committed: boolean): void {
    const tracker = this.claimOf.get(task);
    if (!tracker) return;
    this.claimOf.delete(task);
    if (!committed) tracker.stuck = true;
    if (--tracker.open === 0 && !tracker.stuck) this.settledClaims.push(tracker.id);
  }

  /** Hands the ended claims to a statement that deletes them; they are kept for the next one when it fails. */
  private async withSettledClaims<T>(statement: (ids: string[]) => Promise<T>): Promise<T> {
    const ids = this.settledClaims;
    this.settledClaims = [];
    try {
      return await statement(ids);
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
    // completions waiting to commit hold back new work, so a slow database is not outrun
    if (this.uncommitted >= MAX_UNCOMMITTED) return;
    const room = concurrency + this.o.prefetch;
    const free = room - q.active - q.reserved - q.buffer.length;
    // small refills wait until a quarter of the room is free, rather than one fetch per freed slot
    if (free <= 0 || ((q.fetching > 0 || q.buffer.length > 0) && free < room / 4)) return;
    q.fetching++;
    q.reserved += free;
    const work = (async () => {
      try {
        const wakeups = q.wakeups;
        const now = await currentTime(this.o.db, this.o.clock);
        const fetched = await this.withSettledClaims((forget) => fetchTasks(this.o.db, this.o.s, { queue, kinds: this.kinds, limit: free, workerId: this.o.id, now, forget }));
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
        this.o.log.warn(`fetch from queue ${queue} failed: ${(error as Error).message}`);
      } finally {
        q.fetching--;
        q.reserved -= free;
      }
      this.pump(queue);
    })();
    this.track(work);
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

  /** One attempt: the handler with its timeout, then completion or the failure path. Never throws. */
  private async execute(attempt: Attempt, q: QueueState): Promise<void> {
    const { task, ref } = attempt;
    let committed = true;
    try {
      let output: unknown;
      try {
        const handler: Handler = task.kind === START_KIND ? (_args, ctx) => this.startChildren(task, ctx) : this.handlers[task.kind];
        output = await attempt.run(handler, new AttemptContext(this.o, attempt));
      } finally {
        this.releaseSlot(q, task.queue);
      }
      const json = toJsonOutput(output, this.o.maxOutputBytes);
      if (attempt.tx) await attempt.tx.commit(json, attempt.extensions);
      else if (attempt.extensions.length > 0) await this.completeExtending(ref, json, attempt.extensions);
      else
        committed = await this.complete({
          workflowId: task.workflow_id,
          name: task.name,
          attempt: task.attempt,
          workerId: this.o.id,
          output: json,
          dependents: task.dependents,
          dependentsWait: task.dependents_wait,
          tid: task.tid,
        });
      this.o.log.taskDone(task, 'completed');
    } catch (error) {
      if (attempt.tx) await attempt.tx.rollback();
      committed = await this.fail(task, ref, outcomeOf(error));
    } finally {
      attempt.dispose();
      this.running.delete(attempt.key);
      this.settle(task, committed);
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
      const ctx = this.advanceContext(await currentTime(db, clock, tx));
      await lockWorkflows(tx, ctx.s, [ref.workflowId]);
      for (const tasks of extensions) await applyExtension(tx, ctx, ref.workflowId, tasks);
      const result = await completeTasks(tx, ctx, [{ ...ref, output }]);
      if (result.skipped.length > 0) throw new Error('this attempt is no longer running (timed out, cancelled or rescued)');
      await activateCompleted(tx, ctx, result.activated, false);
      await finalizePending(tx, ctx, result.toFinalize);
    });
  }

  private startChildren(task: FetchedTask, ctx: TaskContext): Promise<unknown> {
    const { db, s, schema, definitions, clock } = this.o;
    return runStartTask({ db, s, schema, definitions, now: () => currentTime(db, clock) }, task, ctx);
  }

  private advanceContext(now: Date) {
    return advanceContext(this.o, now);
  }

  /** Queues a completion for the next batch; resolves once the batch ended, with whether this one committed. */
  private complete(item: Completion): Promise<boolean> {
    this.uncommitted++;
    let batch = this.batches[this.batches.length - 1];
    if (!batch || batch.items.length >= MAX_BATCH) {
      let resolve!: (failed: ReadonlySet<Completion>) => void;
      const committed = new Promise<ReadonlySet<Completion>>((r) => (resolve = r));
      batch = { items: [], committed, resolve };
      this.batches.push(batch);
    }
    batch.items.push(item);
    this.scheduleFlush();
    return batch.committed.then((failed) => !failed.has(item));
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
        if (this.batches.length > 0) this.scheduleFlush();
      });
    this.flushing.add(flush);
  }

  private pendingFlush = false;

  private async flush(): Promise<void> {
    const batch = this.batches.shift();
    if (!batch) return;
    const failed = new Set<Completion>();
    try {
      await this.completeNow(batch.items);
    } catch (error) {
      // A batch that failed as a whole (a deadlock, a lost connection) is retried one attempt at a time,
      // so one bad row cannot hold the others back. What still fails stays running and is rescued later.
      this.o.log.warn(`batch completion failed (${(error as Error).message}); completing one by one`);
      for (const item of batch.items) {
        try {
          await this.completeNow([item]);
        } catch (e) {
          failed.add(item);
          this.o.log.warn(`completion of ${item.workflowId}/${item.name} failed: ${(e as Error).message}`);
        }
      }
    }
    this.uncommitted -= batch.items.length;
    batch.resolve(failed);
    for (const queue of this.perQueue.keys()) this.pump(queue);
  }

  /**
   * One statement completes the batch and claims, for this worker's free slots, the dependents it makes
   * available; workflows left to finalize (output templates) follow in a transaction.
   */
  private async completeNow(items: Completion[]): Promise<void> {
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
    try {
      if (items.some((i) => i.dependentsWait)) {
        // a dependent's wait may become active: evaluate it in the completion's transaction
        result = await db.transaction(async (tx) => {
          const ctx = this.advanceContext(await currentTime(db, clock, tx));
          const r = await completeTasks(tx, ctx, items, claim);
          await activateCompleted(tx, ctx, r.activated, false);
          return r;
        });
      } else {
        result = await completeTasks(db, this.advanceContext(await currentTime(db, clock)), items, claim);
      }
    } finally {
      for (const [queue, n] of Object.entries(slots)) this.perQueue.get(queue)!.reserved -= n;
    }
    for (const task of this.tracked(result.claimed, result.claim)) this.run(task);
    const { activated, toFinalize } = result;
    // activated outside a transaction (a dependent added after this task was claimed): evaluate right after;
    // the leader evaluates any that a crash leaves behind
    if (activated.size > 0 && !items.some((i) => i.dependentsWait)) {
      await db.transaction(async (tx) => activateCompleted(tx, this.advanceContext(await currentTime(db, clock, tx)), activated, true));
    }
    if (toFinalize.length > 0) await db.transaction(async (tx) => finalizePending(tx, this.advanceContext(await currentTime(db, clock, tx)), toFinalize));
  }

  /** Records an attempt's failure (or cancel, snooze, release); false when that could not be committed. */
  private async fail(task: FetchedTask, ref: AttemptRef, outcome: AttemptOutcome): Promise<boolean> {
    try {
      await this.o.db.transaction(async (tx) => endAttempt(tx, this.advanceContext(await currentTime(this.o.db, this.o.clock, tx)), ref, outcome));
      this.o.log.taskDone(task, outcome.type === 'error' ? `failed: ${outcome.error.message}` : outcome.type);
      return true;
    } catch (error) {
      this.o.log.warn(`recording the end of ${task.workflow_id}/${task.name} failed: ${(error as Error).message}`);
      return false;
    }
  }

  /**
   * Graceful stop: no new work; running handlers get until the deadline to finish, then are aborted and
   * their tasks released to run again elsewhere.
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    await this.releaseClaims([...this.perQueue.values()].flatMap((q) => q.buffer.splice(0)));
    const until = Date.now() + deadlineMs;
    while (this.running.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    for (const r of this.running.values()) r.abort(new ShutdownAbort());
    // aborted attempts still record their end (released to run again)
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 5));
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    while (this.flushing.size > 0) await Promise.allSettled([...this.flushing]);
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
    return this.running.size > 0 || this.batches.length > 0 || this.inflight.size > 0 || [...this.perQueue.values()].some((q) => q.buffer.length > 0);
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
    throw new OutputError(`the handler's output is not JSON: ${(error as Error).message}`);
  }
  if (text === undefined) throw new OutputError("the handler's output is not JSON");
  if (Buffer.byteLength(text) > maxBytes) throw new OutputError(`the handler's output is ${Buffer.byteLength(text)} bytes of JSON, over the ${maxBytes}-byte limit`);
  return JSON.parse(text);
}

class OutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputError';
  }
}

/** Whatever a handler threw (not only Errors) becomes a recorded outcome. */
function outcomeOf(thrown: unknown): AttemptOutcome {
  if (thrown instanceof TaskSnoozed) return { type: 'snooze', ms: Math.max(0, thrown.ms) };
  if (thrown instanceof ShutdownAbort) return { type: 'release', error: { message: thrown.message, kind: 'shutdown' } };
  if (thrown instanceof TaskCancelled) return { type: 'cancel', error: { message: thrown.message, kind: 'cancel' } };
  return { type: 'error', error: describeError(thrown) };
}

export function describeError(thrown: unknown): TaskError {
  if (thrown instanceof TaskTimeout) return { message: thrown.message, name: thrown.name, kind: 'timeout' };
  if (thrown instanceof OutputError) return { message: thrown.message, name: thrown.name, kind: 'output' };
  if (thrown instanceof Error) return { message: thrown.message || thrown.name, name: thrown.name, stack: thrown.stack?.split('\n').slice(0, 12).join('\n'), kind: 'error' };
  let text: string;
  try {
    text = typeof thrown === 'string' ? thrown : JSON.stringify(thrown) ?? String(thrown);
  } catch {
    text = String(thrown);
  }
  return { message: `non-Error thrown: ${text.slice(0, 2000)}`, kind: 'error' };
}

export function workerId(): string {
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}
