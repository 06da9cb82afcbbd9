import { START_KIND } from '../../compiler/normalize.js';
import type { Queryable } from '../db/types.js';
import type { SignalPage } from '../sql/signals.js';
import type { TaskRecord } from '../sql/workflows.js';
import type { SignalRow } from '../waits/decide.js';
import type { TaskScopedOptions } from '../waits/signals.js';
import type { CallbackLinkUrl } from '../wire/index.js';
import type { TaskLogger } from './task-log.js';
import type { StreamWriter } from './task-stream.js';

export { MAX_SNOOZE_MS, NonRetryableError, TaskCancelled, TaskSnoozed, TaskTimeout } from './task-errors.js';

/** New tasks, as the `tasks:` map of a definition; deps may name existing tasks (a for_each name means all its expansions). */
export interface ExtensionSpec {
  tasks: Record<string, unknown>;
}

/** A signal term's evidence: the rows that counted toward it (at most its `count`), in the order they came. */
export interface SignalTermEvidence {
  kind: 'signal';
  /** Whether the term was true when the wait resolved. */
  value: boolean;
  signals: SignalRow[];
  matched: number;
  required: number;
  /** With `distinct:`, the values counted, one per row of `signals`. */
  distinct?: unknown[];
}

export interface TimerTermEvidence {
  kind: 'timer';
  value: boolean;
  /** When it fires (null: its anchor has not happened). */
  fireAt: Date | null;
}

export interface ExprTermEvidence {
  kind: 'expr';
  value: boolean;
  /** Why the term could not be evaluated (it then counted as false). */
  error?: string;
}

/** A workflows term's evidence: the awaited workflows, in the order of their ids, with their outputs once completed. */
export interface WorkflowsTermEvidence {
  kind: 'workflows';
  value: boolean;
  outcome: 'satisfied' | 'failed' | 'undecided';
  workflows: { id: string; state: string | null; output: unknown }[];
  completed: number;
  failed: number;
  required: number;
}

export type WaitTermEvidence = SignalTermEvidence | TimerTermEvidence | ExprTermEvidence | WorkflowsTermEvidence;
type TermKinds = Record<string, WaitTermEvidence['kind']>;

/**
 * What made a task's wait true, as it stood when it resolved: each term's value and evidence (by term name;
 * `KindWaits` from `braid types` names a kind's terms and their kinds).
 */
export interface TaskWait<Terms extends TermKinds = TermKinds> {
  expr: string;
  startedAt: Date;
  resolvedAt: Date;
  /** The terms that were true, in the order the wait declares them. */
  satisfied: (keyof Terms & string)[];
  terms: { [N in keyof Terms]: Extract<WaitTermEvidence, { kind: Terms[N] }> };
}

/** The `ctx.wait` of a kind's tasks given their waits' terms (a union when tasks of the kind differ; null for none). */
export type WaitOf<Shape> = Shape extends TermKinds ? TaskWait<Shape> : null;

/** A span attribute's value, as OpenTelemetry takes it. */
export type SpanAttributeValue = string | number | boolean | string[] | number[] | boolean[];

/**
 * What a handler may do with its attempt's span: an OpenTelemetry `Span` is one (braid's types do not need
 * `@opentelemetry/api` installed; with it, `trace.getActiveSpan()` in the handler returns the span itself).
 */
export interface TaskSpan {
  spanContext(): { traceId: string; spanId: string; traceFlags: number };
  isRecording(): boolean;
  setAttribute(key: string, value: SpanAttributeValue): TaskSpan;
  setAttributes(attributes: Record<string, SpanAttributeValue>): TaskSpan;
  addEvent(name: string, attributes?: Record<string, SpanAttributeValue>): TaskSpan;
}

/** What a handler sees besides its args. */
export interface TaskContext<Wait extends TaskWait | null = TaskWait | null, Streams extends object = Record<string, unknown>> {
  workflowId: string;
  /** The task's name in its workflow (`ship[p1]` for an expansion). */
  taskName: string;
  kind: string;
  attempt: number;
  maxAttempts: number;
  /** Aborted at the task's timeout, when its workflow is cancelled, and at shutdown. */
  signal: AbortSignal;
  /** When the attempt times out (its start plus the task's timeout); null for a task without one. */
  readonly deadline: Date | null;
  /**
   * The attempt's log: lines stored with the task (`braid logs`, the API, the UI), a second after they are
   * written and at the attempt's end; bounded per attempt (1,000 lines and 256 KiB by default). Never throws.
   */
  log: TaskLogger;
  /**
   * The attempt's OpenTelemetry span (`braid.task NAME`), active while the handler runs, so spans the handler
   * makes nest under it; a span that records nothing when no tracer provider is registered.
   */
  span: TaskSpan;
  /** Direct deps' outputs by task name. */
  deps: Record<string, unknown>;
  /**
   * What satisfied the task's wait when it resolved: which terms were true, the signal rows that counted toward
   * each signal term (not every row of the key), each workflows term's awaited workflows. Null without a wait.
   */
  wait: Wait;
  /** Direct deps (or, recursively, all upstream tasks) with their state and output. */
  loadDeps(options?: { recursive?: boolean }): Promise<Record<string, TaskRecord>>;
  /**
   * Runs fn in the transaction that will complete this task: the handler's writes commit if and only if
   * the task completes. Call it once, as the handler's last database work (the embedded database runs one
   * transaction at a time).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * The signals this task's wait declares, in the current workflow attempt, up to the evidence boundary
   * captured when the wait resolved (unless includeAfterResolution). An undeclared key is an error.
   */
  signals: {
    latest(key: string, options?: TaskScopedOptions): Promise<SignalRow | null>;
    list(options?: TaskScopedOptions & { key?: string; cursorId?: string; limit?: number }): Promise<SignalPage>;
  };
  /**
   * The workflows a workflows term of this task's wait awaited, in the order of their ids: each one's state,
   * and its output once completed.
   */
  workflowResults(term: string): Promise<{ id: string; state: string | null; output: unknown }[]>;
  /**
   * The signed links of a callback term of a task of this workflow (often a later one: send them, then wait),
   * one per recipient: `{ recipient, token, path, url }`, url null unless the runtime knows where it is served
   * (publicUrl, BRAID_PUBLIC_URL). The same links however often asked; they exist before the wait starts.
   */
  callbacks(task: string, term: string): Promise<CallbackLinkUrl[]>;
  /**
   * An output stream the task declares (`streams:`): `write(chunk)` checks the chunk (its schema, 1 MiB) and
   * queues it; chunks are stored in order, in batches, and all of them before the attempt's end is. Readers
   * follow it live (braid stream, GET .../streams/NAME, the UI). A new attempt starts a new stream.
   */
  stream<N extends keyof Streams & string>(name: N): StreamWriter<Streams[N]>;
  /**
   * Adds tasks to this workflow (a `tasks:` map in the definition language; deps may name existing tasks),
   * checked now and inserted in the transaction that completes this task: if the task does not complete,
   * nothing is added. Returns the new tasks' names.
   */
  extend(spec: ExtensionSpec): Promise<string[]>;
  /** Ends the task for good as cancelled (its dependents see a cancelled dep). */
  cancel(reason?: string): never;
  /** Runs the task again after `ms`, without using up an attempt. */
  snooze(ms: number): never;
  /**
   * Fails the attempt with `message` (and `code`, which a task's `retry.non_retryable` may name); with
   * `retry: false` the task ends at once, whatever attempts it has left (as a thrown NonRetryableError does).
   */
  fail(message: string, options?: { retry?: boolean; code?: string }): never;
}

// biome-ignore lint/suspicious/noExplicitAny: a handler map holds handlers of every kind's own args type (unknown would refuse them)
export type Handler = (args: any, ctx: TaskContext) => unknown;
export type Handlers = Record<string, Handler>;

/**
 * Handlers typed by kind: with `KindArgs` from `braid types`, `defineHandlers<KindArgs>({...})` types each
 * handler's args and makes a kind the definitions use but the map lacks a type error; with `KindOutputs` too,
 * `defineHandlers<KindArgs, KindOutputs>({...})` checks what each handler returns against its kind's `returns`
 * (a promise of it, or it); with `KindWaits` as well, each handler's `ctx.wait` names its wait's terms; with
 * `KindStreams`, `ctx.stream(NAME)` takes only the kind's streams and their chunks' types.
 * Returns the map as is.
 */
export function defineHandlers<
  // biome-ignore lint/suspicious/noExplicitAny: without KindArgs, any kind's args are accepted as they are
  A extends object = Record<string, any>,
  O extends { [K in keyof A]?: unknown } = { [K in keyof A]: unknown },
  W extends { [K in keyof A]?: unknown } = { [K in keyof A]: TermKinds | null },
  S extends { [K in keyof A]?: object } = { [K in keyof A]: Record<string, unknown> },
>(handlers: { [K in keyof A]: (args: A[K], ctx: TaskContext<WaitFor<W, K>, StreamsFor<S, K>>) => OutputOf<O, K> | Promise<OutputOf<O, K>> }): Handlers {
  return handlers as Handlers;
}

/** What a kind's handler may return: its KindOutputs entry, or anything for a kind without one. */
type OutputOf<O, K> = K extends keyof O ? O[K] : unknown;
/** A kind's ctx.wait: from its KindWaits entry, or any wait for a kind without one. */
type WaitFor<W, K> = K extends keyof W ? WaitOf<W[K]> : TaskWait | null;
/** A kind's streams: from its KindStreams entry, or any stream for a kind without one. */
type StreamsFor<S, K> = K extends keyof S ? (S[K] extends object ? S[K] : Record<string, unknown>) : Record<string, unknown>;

/** The kinds a worker runs with these handlers: theirs, and the built-in start handler's. */
export function handledKinds(handlers: Handlers): string[] {
  return [...Object.keys(handlers), START_KIND].sort();
}
