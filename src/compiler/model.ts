/**
 * The typed view of a definition that every pass after the schema reads. It is built tolerantly: a field
 * of the wrong type is simply absent here (the schema pass has already reported it), so one broken field
 * never hides the problems of the rest of the file.
 */

import { bool, isObject, listOrTemplate, num, obj, str, strList } from './model-values.js';
import { readWait, type TermDef, type WaitDef } from './model-wait.js';

export type { CallbackDef, TermDef, TermKind, TimerDef, WaitDef, WorkflowsDef } from './model-wait.js';

export interface Definition {
  name?: string;
  description?: string;
  inputs?: Record<string, unknown>;
  defaults: TaskDefaults;
  tasks: TaskDef[];
  output?: unknown;
  /** How long the workflow may run (a duration). */
  timeout?: string;
  /** Clocks that start the workflow. */
  schedules: ScheduleDef[];
  /** At most `limit` runs per key with a task in flight. */
  concurrency?: ConcurrencyDef;
  /** The fairness of every task that sets none (as `defaults:` would). */
  fairness?: FairnessDef;
  /** The rate limit of every task that sets none (as `defaults:` would). */
  rate_limit?: RateLimitDef;
  /** Starts with one key within `quiet` make one run. */
  debounce?: DebounceDef;
  /** A workflow started once per failure (its inputs may read `failed`). */
  on_failure?: FailureHook;
  /** How long failed runs are kept: `keep`, or a duration. */
  retention?: { failed?: string };
  /** Events that start it. */
  triggers: TriggerDef[];
  /** The plain JSON value as parsed. */
  raw: Record<string, unknown>;
}

export interface TriggerDef {
  /** Its place in the list, for paths. */
  index: number;
  event?: string;
  /** Raw CEL over `event`: the event starts a run only when true. */
  where?: string;
  /** Raw CEL over `event`: the run's business key. */
  id?: string;
  /** Templates over `event`. */
  inputs?: Record<string, unknown>;
  /** The event's payload schema, from the project config's `events:` (absent when the event is not declared there). */
  schema?: Record<string, unknown>;
  /** Whether the project config declares the event. */
  declared?: boolean;
}

export interface TaskDefaults {
  queue?: string;
  priority?: number;
  max_attempts?: number;
  timeout?: string;
  retry?: RetryDef;
  ignore_cancelled_deps?: boolean;
  ignore_discarded_deps?: boolean;
  ignore_deleted_deps?: boolean;
  ignore_skipped_deps?: boolean;
  concurrency?: ConcurrencyDef;
  fairness?: FairnessDef;
  rate_limit?: RateLimitDef;
}

/** Flow control: `key` is raw CEL; a count is an integer or raw CEL yielding one. Absent fields were schema errors. */
export interface ConcurrencyDef {
  key?: string;
  limit?: number | string;
}

export interface FairnessDef {
  key?: string;
  weight?: number | string;
}

export interface RateLimitDef {
  key?: string;
  limit?: number;
  per?: string;
}

export interface DebounceDef {
  key?: string;
  quiet?: string;
}

/** The flow controls a task or `defaults:` may set. */
export const FLOW_CONTROLS = ['concurrency', 'fairness', 'rate_limit'] as const;

export interface ScheduleDef {
  /** Its place in the list, for paths. */
  index: number;
  name?: string;
  description?: string;
  cron?: string;
  every?: string;
  timezone?: string;
  inputs?: Record<string, unknown>;
  overlap?: 'skip' | 'buffer_one' | 'allow' | 'cancel_previous';
  catchup?: string;
  jitter?: string;
  dst?: { repeated?: 'first' | 'both'; skipped?: 'shift' | 'skip' };
  start_at?: string;
  end_at?: string;
  paused?: boolean;
}

export interface RetryDef {
  backoff?: 'exponential' | 'linear' | 'constant';
  initial?: string;
  max?: string;
  jitter?: boolean;
  /** Error codes that end the task at once, whatever attempts it has left. */
  non_retryable?: string[];
}

export interface TaskDef extends TaskDefaults {
  name: string;
  /** Declaration order, for stable tie-breaking. */
  index: number;
  kind?: string;
  description?: string;
  args?: Record<string, unknown>;
  deps: string[];
  wait?: WaitDef;
  delay?: string;
  scheduled_at?: string;
  for_each?: string | unknown[];
  key?: string;
  start?: StartDef;
  metadata?: Record<string, unknown>;
  /** Raw CEL: the task runs only when it is true (evaluated once every dep is final). */
  when?: string;
  /** The task's name in earlier versions, so running workflows follow the rename (plan, upgrade). */
  renamed_from?: string;
  /** The JSON Schema of its handler's output: the task's own, else its kind's in the project config. */
  returns?: Record<string, unknown>;
  /** The largest output its handler may return, as written (the task's, or its kind's from the project config). */
  max_output?: number | string;
  /** Where `returns` came from: the task itself, or the project config's `kinds`. */
  returnsFrom?: 'task' | 'config';
  /** Its handler's output streams by name, each with the JSON Schema of a chunk. */
  streams?: Record<string, { schema?: Record<string, unknown> }>;
}

export interface StartDef {
  workflow?: string;
  inputs?: Record<string, unknown>;
  for_each?: string | unknown[];
  group?: string;
}

export function buildDefinition(value: unknown): Definition | undefined {
  if (!isObject(value)) return undefined;
  const tasks = obj(value.tasks) ?? {};
  return {
    name: str(value.name),
    description: str(value.description),
    inputs: obj(value.inputs),
    defaults: readDefaults(obj(value.defaults) ?? {}),
    tasks: Object.entries(tasks).map(([name, t], index) => readTask(name, index, obj(t) ?? {})),
    output: value.output,
    timeout: str(value.timeout),
    schedules: Array.isArray(value.schedules) ? value.schedules.map((v, index) => readSchedule(index, obj(v) ?? {})) : [],
    triggers: Array.isArray(value.triggers) ? value.triggers.map((v, index) => readTrigger(index, obj(v) ?? {})) : [],
    ...readFlow(value),
    ...(obj(value.debounce) ? { debounce: { key: str(obj(value.debounce)!.key), quiet: str(obj(value.debounce)!.quiet) } } : {}),
    ...readFailure(value),
    raw: value,
  };
}

/**
 * A failed run's hook: the workflow it starts, written flat (`on_failure: { workflow, inputs }`) or under `start:`
 * (`at` says where, for diagnostics), and its grouping.
 */
export interface FailureHook {
  start?: { workflow?: string; inputs?: Record<string, unknown> };
  at: (string | number)[];
  /** Both forms written at once (a mistake the rules report). */
  both: boolean;
  group_by?: string;
  window?: string;
}

/** on_failure and retention, each present only when written. */
function readFailure(value: Record<string, unknown>): Pick<Definition, 'on_failure' | 'retention'> {
  const hook = obj(value.on_failure);
  const retention = obj(value.retention);
  return {
    ...(hook ? { on_failure: readHook(hook) } : {}),
    ...(retention ? { retention: { failed: str(retention.failed) } } : {}),
  };
}

function readHook(hook: Record<string, unknown>): FailureHook {
  const nested = obj(hook.start);
  const flat = hook.workflow !== undefined || hook.inputs !== undefined;
  const from = nested ?? (flat ? hook : undefined);
  return {
    ...(from ? { start: { workflow: str(from.workflow), inputs: obj(from.inputs) } } : {}),
    at: nested ? ['on_failure', 'start'] : ['on_failure'],
    both: nested !== undefined && flat,
    group_by: str(hook.group_by),
    window: str(hook.window),
  };
}

function readTrigger(index: number, v: Record<string, unknown>): TriggerDef {
  return { index, event: str(v.event), where: str(v.where), id: str(v.id), inputs: obj(v.inputs) };
}

const OVERLAPS = ['skip', 'buffer_one', 'allow', 'cancel_previous'] as const;
const oneOf = <T extends string>(v: unknown, options: readonly T[]): T | undefined => (options.includes(v as T) ? (v as T) : undefined);

function readSchedule(index: number, v: Record<string, unknown>): ScheduleDef {
  const dst = obj(v.dst);
  return {
    index,
    name: str(v.name),
    description: str(v.description),
    cron: str(v.cron),
    every: str(v.every),
    timezone: str(v.timezone),
    inputs: obj(v.inputs),
    overlap: oneOf(v.overlap, OVERLAPS),
    catchup: str(v.catchup),
    jitter: str(v.jitter),
    dst: dst ? { repeated: oneOf(dst.repeated, ['first', 'both'] as const), skipped: oneOf(dst.skipped, ['shift', 'skip'] as const) } : undefined,
    start_at: str(v.start_at),
    end_at: str(v.end_at),
    paused: bool(v.paused),
  };
}

export function schedulePath(schedule: ScheduleDef, ...rest: (string | number)[]): (string | number)[] {
  return ['schedules', schedule.index, ...rest];
}

const countOrCel = (v: unknown): number | string | undefined => num(v) ?? str(v);

function readFlow(v: Record<string, unknown>): Pick<TaskDefaults, 'concurrency' | 'fairness' | 'rate_limit'> {
  const c = obj(v.concurrency);
  const f = obj(v.fairness);
  const r = obj(v.rate_limit);
  return {
    ...(c ? { concurrency: { key: str(c.key), limit: countOrCel(c.limit) } } : {}),
    ...(f ? { fairness: { key: str(f.key), weight: countOrCel(f.weight) } } : {}),
    ...(r ? { rate_limit: { key: str(r.key), limit: num(r.limit), per: str(r.per) } } : {}),
  };
}

function readDefaults(v: Record<string, unknown>): TaskDefaults {
  return {
    ...readFlow(v),
    queue: str(v.queue),
    priority: num(v.priority),
    max_attempts: num(v.max_attempts),
    timeout: str(v.timeout),
    retry: readRetry(v.retry),
    ignore_cancelled_deps: bool(v.ignore_cancelled_deps),
    ignore_discarded_deps: bool(v.ignore_discarded_deps),
    ignore_deleted_deps: bool(v.ignore_deleted_deps),
    ignore_skipped_deps: bool(v.ignore_skipped_deps),
  };
}

function readRetry(v: unknown): RetryDef | undefined {
  const r = obj(v);
  if (!r) return undefined;
  const backoff = r.backoff === 'exponential' || r.backoff === 'linear' || r.backoff === 'constant' ? r.backoff : undefined;
  const codes = Array.isArray(r.non_retryable) ? r.non_retryable.filter((c): c is string => typeof c === 'string') : undefined;
  return { backoff, initial: str(r.initial), max: str(r.max), jitter: bool(r.jitter), ...(codes ? { non_retryable: codes } : {}) };
}

function readTask(name: string, index: number, v: Record<string, unknown>): TaskDef {
  const start = obj(v.start);
  const wait = obj(v.wait);
  return {
    ...readDefaults(v),
    name,
    index,
    kind: str(v.kind),
    description: str(v.description),
    args: obj(v.args),
    deps: strList(v.deps),
    wait: wait ? readWait(wait) : undefined,
    delay: str(v.delay),
    scheduled_at: str(v.scheduled_at),
    for_each: listOrTemplate(v.for_each),
    key: str(v.key),
    start: start ? { workflow: str(start.workflow), inputs: obj(start.inputs), for_each: listOrTemplate(start.for_each), group: str(start.group) } : undefined,
    metadata: obj(v.metadata),
    when: str(v.when),
    renamed_from: str(v.renamed_from),
    ...(obj(v.returns) ? { returns: obj(v.returns), returnsFrom: 'task' as const } : {}),
    ...(typeof v.max_output === 'number' || typeof v.max_output === 'string' ? { max_output: v.max_output } : {}),
    ...(obj(v.streams) ? { streams: Object.fromEntries(Object.entries(obj(v.streams)!).map(([n, d]) => [n, { schema: obj(obj(d)?.schema) }])) } : {}),
  };
}

export function taskPath(task: TaskDef, ...rest: (string | number)[]): (string | number)[] {
  return ['tasks', task.name, ...rest];
}

export function termPath(task: TaskDef, term: TermDef, ...rest: (string | number)[]): (string | number)[] {
  return ['tasks', task.name, 'wait', 'terms', term.name, ...rest];
}
