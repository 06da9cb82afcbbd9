import { hostname } from 'node:os';
import type { Database, Queryable } from './db/types.js';
import type { DefinitionCache } from './definition-cache.js';
import { TaskCancelled, TaskSnoozed, TaskTimeout, type Handler, type Handlers, type TaskContext } from './handlers.js';
import { START_KIND } from '../compiler/normalize.js';
import { runStartTask } from './start.js';
import { channels } from './sql/channels.js';
import { activateCompleted, completeTasks, finalizePending, type Completion } from './sql/complete.js';
import { endAttempt, releaseTasks, type AttemptOutcome, type AttemptRef, type TaskError } from './sql/fail.js';
import { fetchTasks, type FetchedTask } from './sql/fetch.js';
import { lockWorkflows, type AdvanceContext } from './sql/advance.js';
import { currentTime, type Clock } from './sql/time.js';
import { heartbeatWorker, registerWorker, stopWorker } from './sql/workers.js';
import { loadTasksByName, type TaskRecord } from './sql/workflows.js';
import { listTaskSignals } from './signals.js';
import { workflowResults } from './waits.js';
import { applyExtension, compileFor } from './extend.js';
import type { PlanTask } from '../compiler/plan.js';
import { registeredNames } from './sql/definitions.js';
import type { Logger } from './log.js';

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

interface Running {
  task: FetchedTask;
  abort: AbortController;
}

interface PendingCompletion {
  item: Completion;
  done: () => void;
}

/**
 * Runs handlers for its queues: claims available tasks in batches sized to free slots, runs each attempt,
 * and completes attempts in batches (each task's completion, output and dependents' advancement atomic).
 */
export class Worker {
  private readonly running = new Map<string, Running>();
  /**
   * Per queue: handlers running, slots reserved by fetches in flight, fetches in flight, whether work seems to
   * wait, and the claimed attempts waiting here for a slot (prefetch).
   */
  private readonly perQueue = new Map<string, { active: number; reserved: number; fetching: number; more: boolean; buffer: FetchedTask[] }>();
  private readonly completions: PendingCompletion[] = [];
  /** Completions queued or in a batch in flight, not yet committed. */
  private uncommitted = 0;
  private readonly flushing = new Set<Promise<void>>();
  private readonly inflight = new Set<Promise<unknown>>();
  private timers: NodeJS.Timeout[] = [];
  private unlisten: (() => Promise<void>)[] = [];
  private stopping = false;
  private started = false;

  constructor(private readonly o: WorkerOptions) {
    for (const q of Object.keys(o.queues)) this.perQueue.set(q, { active: 0, reserved: 0, fetching: 0, more: true, buffer: [] });
  }

  /** The kinds this worker runs: its handlers', and the built-in start handler's. */
  get kinds(): string[] {
    return [...Object.keys(this.o.handlers), START_KIND].sort();
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const { db, s } = this.o;
    const now = await currentTime(db, this.o.clock);
    await registerWorker(db, s, { id: this.o.id, host: hostname(), pid: process.pid, queues: Object.keys(this.o.queues), kinds: this.kinds }, now);
    const ch = channels(this.o.schema);
    this.unlisten.push(
      await db.listen(ch.available, (queue) => {
        const q = this.perQueue.get(queue);
        if (!q) return;
        q.more = true;
        this.pump(queue);
      }),
      await db.listen(ch.cancel, (workflowId) => {
        for (const r of this.running.values()) if (r.task.workflow_id === workflowId) r.abort.abort(new TaskCancelled('workflow cancelled'));
        for (const q of this.perQueue.values()) {
          const cancelled = q.buffer.filter((t) => t.workflow_id === workflowId);
          if (cancelled.length === 0) continue;
          q.buffer = q.buffer.filter((t) => t.workflow_id !== workflowId);
          for (const t of cancelled) this.track(this.fail(t, this.ref(t), { type: 'cancel', error: { message: 'workflow cancelled', kind: 'cancel' } }));
        }
      }),
    );
    this.timers.push(
      setInterval(() => {
        for (const [queue, q] of this.perQueue) {
          q.more = true;
          this.pump(queue);
        }
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
        const now = await currentTime(this.o.db, this.o.clock);
        const tasks = await fetchTasks(this.o.db, this.o.s, { queue, kinds: this.kinds, limit: free, workerId: this.o.id, now });
        q.more = tasks.length === free;
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
    const deps = Object.fromEntries(task.deps.map((d) => [d, task.dep_outputs?.[d] ?? null]));
    let released = false;
    // the slot is the handler's: it frees when the handler settles, while its completion commits in a batch
    const release = () => {
      if (released) return;
      released = true;
      q.active--;
      // slots freed in the same turn are refilled by one fetch, not one fetch per slot
      q.more = true;
      setImmediate(() => this.pump(task.queue));
    };
    this.track(this.execute(task, deps, release).finally(release));
  }

  private track<T>(p: Promise<T>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
  }

  /** One attempt: the handler with its timeout, then completion or the failure path. Never throws. */
  private async execute(task: FetchedTask, deps: Record<string, unknown>, release: () => void): Promise<void> {
    const key = `${task.workflow_id}\u0000${task.name}`;
    const abort = new AbortController();
    this.running.set(key, { task, abort });
    const ref = this.ref(task);
    const tx = new AttemptTransaction(this.o, ref);
    const extensions: PlanTask[][] = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      const handler: Handler = task.kind === START_KIND ? (_args, ctx) => this.startChildren(task, ctx) : this.o.handlers[task.kind];
      const ctx = this.context(task, deps, abort.signal, tx, extensions);
      const timeout = new Promise<never>((_, reject) => {
        if (task.timeout_ms !== null) {
          timer = setTimeout(() => {
            const error = new TaskTimeout(task.timeout_ms!);
            abort.abort(error);
            reject(error);
          }, task.timeout_ms);
        }
        abort.signal.addEventListener('abort', () => {
          if (abort.signal.reason instanceof ShutdownAbort) reject(abort.signal.reason);
        });
      });
      const output = await Promise.race([Promise.resolve().then(() => handler(task.args, ctx)), timeout]).finally(release);
      const json = toJsonOutput(output, this.o.maxOutputBytes);
      if (tx.opened) await tx.commit(json, extensions);
      else if (extensions.length > 0) await this.completeExtending(ref, json, extensions);
      else
        await this.complete({
          workflowId: task.workflow_id,
          name: task.name,
          attempt: task.attempt,
          workerId: this.o.id,
          output: json,
          dependents: task.dependents,
          dependentsWait: task.dependents_wait,
        });
      this.o.log.taskDone(task, 'completed');
    } catch (error) {
      if (tx.opened) await tx.rollback();
      await this.fail(task, ref, outcomeOf(error));
    } finally {
      clearTimeout(timer);
      this.running.delete(key);
    }
  }

  private context(task: FetchedTask, deps: Record<string, unknown>, signal: AbortSignal, tx: AttemptTransaction, extensions: PlanTask[][]): TaskContext {
    const { db, s } = this.o;
    return {
      workflowId: task.workflow_id,
      taskName: task.name,
      kind: task.kind,
      attempt: task.attempt,
      maxAttempts: task.max_attempts,
      signal,
      deps,
      loadDeps: (options = {}) => loadDeps(db, s, task.workflow_id, task.deps, options.recursive ?? false),
      transaction: (fn) => tx.open(fn),
      workflowResults: (term) => workflowResults(db, s, task.workflow_id, task.name, term),
      extend: async (spec) => {
        // inside the attempt's own transaction once it is open (the embedded database runs one at a time)
        const q = tx.queryable ?? db;
        const ctx = this.advanceContext(await currentTime(db, this.o.clock, q));
        const tasks = await compileFor(q, ctx, task.workflow_id, spec, await registeredNames(q, s));
        extensions.push(tasks);
        return tasks.map((t) => t.name);
      },
      signals: {
        latest: async (key, options = {}) => (await listTaskSignals(db, s, task.workflow_id, task.name, { ...options, key, limit: 1, newestFirst: true }))?.signals[0] ?? null,
        list: async (options = {}) => (await listTaskSignals(db, s, task.workflow_id, task.name, options)) ?? { signals: [], next_cursor_id: null, has_more: false },
      },
      cancel: (reason) => {
        throw new TaskCancelled(reason);
      },
      snooze: (ms) => {
        throw new TaskSnoozed(ms);
      },
    };
  }

  private ref(task: FetchedTask): AttemptRef {
    return { workflowId: task.workflow_id, name: task.name, attempt: task.attempt, workerId: this.o.id };
  }

  /** Gives prefetched attempts that never started back to the queue, so other workers take them at once. */
  private async releaseClaims(tasks: FetchedTask[]): Promise<void> {
    if (tasks.length === 0) return;
    try {
      await this.o.db.transaction(async (tx) => releaseTasks(tx, this.advanceContext(await currentTime(this.o.db, this.o.clock, tx)), tasks.map((t) => this.ref(t))));
    } catch (error) {
      this.o.log.warn(`releasing ${tasks.length} prefetched tasks failed (they are rescued later): ${(error as Error).message}`);
    }
  }

  /** A completion that adds tasks: the extension and the completion commit together, outside the batch. */
  private async completeExtending(ref: AttemptRef, output: unknown, extensions: PlanTask[][]): Promise<void> {
    const { db, clock } = this.o;
    await db.transaction(async (tx) => {
      const ctx = this.advanceContext(await currentTime(db, clock, tx));
      await lockWorkflows(tx, ctx.s, [ref.workflowId]);
      for (const tasks of extensions) await applyExtension(tx, ctx, ref.workflowId, tasks);
      const result = await completeTasks(tx, ctx, [{ ...ref, output }]);
      if (result.applied.size === 0) throw new Error('this attempt is no longer running (timed out, cancelled or rescued)');
      await activateCompleted(tx, ctx, result.activated, false);
      await finalizePending(tx, ctx, result.toFinalize);
    });
  }

  private startChildren(task: FetchedTask, ctx: TaskContext): Promise<unknown> {
    const { db, s, schema, definitions, clock } = this.o;
    return runStartTask({ db, s, schema, definitions, now: () => currentTime(db, clock) }, task, ctx);
  }

  private advanceContext(now: Date): AdvanceContext {
    return { s: this.o.s, schema: this.o.schema, now, definitions: this.o.definitions };
  }

  /** Queues a completion for the next batch and resolves once it committed. */
  private complete(item: Completion): Promise<void> {
    this.uncommitted++;
    return new Promise((resolve) => {
      this.completions.push({
        item,
        done: () => {
          this.uncommitted--;
          resolve();
        },
      });
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
        if (this.completions.length > 0) this.scheduleFlush();
      });
    this.flushing.add(flush);
  }

  private pendingFlush = false;

  private async flush(): Promise<void> {
    const batch = this.completions.splice(0, 500);
    if (batch.length === 0) return;
    try {
      await this.completeNow(batch.map((b) => b.item));
    } catch (error) {
      // A batch that failed as a whole (a deadlock, a lost connection) is retried one attempt at a time,
      // so one bad row cannot hold the others back. What still fails stays running and is rescued later.
      this.o.log.warn(`batch completion failed (${(error as Error).message}); completing one by one`);
      for (const b of batch) {
        try {
          await this.completeNow([b.item]);
        } catch (e) {
          this.o.log.warn(`completion of ${b.item.workflowId}/${b.item.name} failed: ${(e as Error).message}`);
        }
      }
    }
    for (const b of batch) b.done();
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
    for (const task of result.claimed) this.run(task);
    const { activated, toFinalize } = result;
    // activated outside a transaction (a dependent added after this task was claimed): evaluate right after;
    // the leader evaluates any that a crash leaves behind
    if (activated.size > 0 && !items.some((i) => i.dependentsWait)) {
      await db.transaction(async (tx) => activateCompleted(tx, this.advanceContext(await currentTime(db, clock, tx)), activated, true));
    }
    if (toFinalize.length > 0) await db.transaction(async (tx) => finalizePending(tx, this.advanceContext(await currentTime(db, clock, tx)), toFinalize));
  }

  private async fail(task: FetchedTask, ref: AttemptRef, outcome: AttemptOutcome): Promise<void> {
    try {
      await this.o.db.transaction(async (tx) => endAttempt(tx, this.advanceContext(await currentTime(this.o.db, this.o.clock, tx)), ref, outcome));
      this.o.log.taskDone(task, outcome.type === 'error' ? `failed: ${outcome.error.message}` : outcome.type);
    } catch (error) {
      this.o.log.warn(`recording the end of ${task.workflow_id}/${task.name} failed: ${(error as Error).message}`);
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
    for (const r of this.running.values()) r.abort.abort(new ShutdownAbort());
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    while (this.flushing.size > 0) await Promise.allSettled([...this.flushing]);
    for (const u of this.unlisten) await u().catch(() => undefined);
    try {
      await stopWorker(this.o.db, this.o.s, this.o.id, await currentTime(this.o.db, this.o.clock));
    } catch (error) {
      this.o.log.warn(`could not record the worker's stop: ${(error as Error).message}`);
    }
  }

  /** For tests and `--wait`: whether anything is running or queued to complete. */
  get busy(): boolean {
    return this.running.size > 0 || this.completions.length > 0 || this.inflight.size > 0 || [...this.perQueue.values()].some((q) => q.buffer.length > 0);
  }
}

/** Two fetches per queue may be in flight: one refills what the other's handlers freed. */
const MAX_FETCHES_IN_FLIGHT = 2;
const MAX_FLUSHES_IN_FLIGHT = 2;
const MAX_UNCOMMITTED = 1000;

class ShutdownAbort extends Error {
  constructor() {
    super('aborted: the worker shut down before the handler finished');
    this.name = 'ShutdownAbort';
  }
}

/** The transaction a handler opened with ctx.transaction(): held open until the attempt ends, then committed with the completion. */
class AttemptTransaction {
  private settle?: (outcome: { output: unknown; extensions: PlanTask[][] } | undefined) => void;
  private done?: Promise<unknown>;
  opened = false;
  /** The open transaction, while it is open: the handler's other database reads go through it. */
  queryable?: Queryable;

  constructor(
    private readonly o: WorkerOptions,
    private readonly ref: AttemptRef,
  ) {}

  open<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    if (this.opened) return Promise.reject(new Error('ctx.transaction() can be used once per attempt'));
    this.opened = true;
    return new Promise<T>((resolveResult, rejectResult) => {
      const ended = new Promise<{ output: unknown; extensions: PlanTask[][] } | undefined>((r) => (this.settle = r));
      this.done = this.o.db.transaction(async (tx) => {
        this.queryable = tx;
        const now = await currentTime(this.o.db, this.o.clock, tx);
        await lockWorkflows(tx, this.o.s, [this.ref.workflowId]);
        const { rows } = await tx.query<{ ok: boolean }>(
          `SELECT (state = 'running' AND attempt = $3 AND worker_id = $4) AS ok FROM ${this.o.s}.tasks WHERE workflow_id = $1 AND name = $2`,
          [this.ref.workflowId, this.ref.name, this.ref.attempt, this.ref.workerId],
        );
        if (!rows[0]?.ok) {
          const error = new Error('this attempt is no longer running (timed out, cancelled or rescued)');
          rejectResult(error);
          throw error;
        }
        try {
          resolveResult(await fn(tx));
        } catch (error) {
          rejectResult(error);
          throw error;
        }
        const outcome = await ended;
        if (!outcome) throw new RollbackSignal();
        const ctx = { s: this.o.s, schema: this.o.schema, now, definitions: this.o.definitions };
        for (const tasks of outcome.extensions) await applyExtension(tx, ctx, this.ref.workflowId, tasks);
        const result = await completeTasks(tx, ctx, [{ ...this.ref, output: outcome.output }]);
        if (result.applied.size === 0) throw new Error('this attempt is no longer running');
        await activateCompleted(tx, ctx, result.activated, false);
        await finalizePending(tx, ctx, result.toFinalize);
      });
      this.done.catch(() => undefined);
    });
  }

  async commit(output: unknown, extensions: PlanTask[][]): Promise<void> {
    this.settle!({ output, extensions });
    try {
      await this.done;
    } finally {
      this.queryable = undefined;
    }
  }

  async rollback(): Promise<void> {
    this.settle?.(undefined);
    await this.done?.catch(() => undefined);
    this.queryable = undefined;
  }
}

class RollbackSignal extends Error {}

async function loadDeps(db: Queryable, s: string, workflowId: string, direct: string[], recursive: boolean): Promise<Record<string, TaskRecord>> {
  const found = new Map<string, TaskRecord>();
  let frontier = direct;
  while (frontier.length > 0) {
    const rows = await loadTasksByName(db, s, workflowId, frontier.filter((n) => !found.has(n)));
    for (const r of rows) found.set(r.name, r);
    frontier = recursive ? [...new Set(rows.flatMap((r) => r.deps))].filter((n) => !found.has(n)) : [];
  }
  return Object.fromEntries(found);
}

/** A handler's return value as stored JSON; anything that is not JSON (or too large) is the attempt's error. */
export function toJsonOutput(value: unknown, maxBytes: number): unknown {
  if (value === undefined) return null;
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
