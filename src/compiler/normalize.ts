import { canonicalJson, sha256Hex } from './canonical-json.js';
import { parseDuration } from './duration.js';
import { type NormalizedWait, normalizeTerm, normalizeTimer } from './normalize-wait.js';

export type { NormalizedCallback, NormalizedTerm, NormalizedTimer, NormalizedWait, NormalizedWorkflows } from './normalize-wait.js';

import type { ConcurrencyDef, Definition, FairnessDef, RateLimitDef, RetryDef, ScheduleDef, TaskDef } from './model.js';
import { DEFAULT_DST, type ScheduleTiming } from './schedule/ticks.js';
import { parseSize } from './size.js';

/**
 * The normalised definition: defaults resolved into every task, durations in milliseconds, ordered maps
 * turned into lists (so declaration order survives canonical JSON). Its canonical JSON hash is the
 * definition's version: formatting, comments and spelled-out defaults do not change it.
 */
export interface NormalizedDefinition {
  format: 1;
  name: string;
  description?: string;
  inputs?: Record<string, unknown>;
  tasks: NormalizedTask[];
  output?: unknown;
  /**
   * The workflow's `defaults:` as written (durations in ms), present only when it declares some: its tasks
   * have them resolved already; tasks added later (extensions) take them from here.
   */
  defaults?: NormalizedDefaults;
  /** The workflow's timeout, when it sets one. */
  timeout_ms?: number;
  /** Its schedules, when it declares some (absent otherwise, so other definitions keep their hash). */
  schedules?: NormalizedSchedule[];
  /** At most `limit` runs per key with a task in flight, when it says. */
  concurrency?: NormalizedConcurrency;
  /** Starts with one key within `quiet_ms` make one run, when it says. */
  debounce?: { key: string; quiet_ms: number };
  /** The workflow a failed run starts, once per failure, when it says (its inputs' templates read `failed`). */
  /** group: failures with one key (`by`, a template; one group without it) start one run per window. */
  on_failure?: { start: { workflow: string; inputs: Record<string, unknown> }; group?: { by?: string; window_ms: number } };
  /** How long a failed run is kept when it says: null for keep (until deleted by hand). */
  retention?: { failed_ms: number | null };
  /** The events that start it, when it declares some. */
  triggers?: NormalizedTrigger[];
}

/** A trigger: its event, raw CEL `where` and `id` over `event`, inputs' templates, and the event's payload schema. */
export interface NormalizedTrigger {
  event: string;
  where?: string;
  id?: string;
  inputs: Record<string, unknown>;
  schema?: Record<string, unknown>;
}

/** Flow control as declared (keys and CEL counts raw), each present only when set. */
export interface NormalizedFlow {
  concurrency?: NormalizedConcurrency;
  fairness?: { key: string; weight: number | string };
  rate_limit?: { key: string; limit: number; per_ms: number };
}

export interface NormalizedConcurrency {
  key: string;
  limit: number | string;
}

/** A schedule with its defaults filled in and durations in milliseconds. */
export interface NormalizedSchedule extends ScheduleTiming {
  name: string;
  description?: string;
  inputs: Record<string, unknown>;
  overlap: 'skip' | 'buffer_one' | 'allow' | 'cancel_previous';
  catchup_ms: number;
  jitter_ms: number;
  paused: boolean;
}

export interface NormalizedDefaults {
  queue?: string;
  priority?: number;
  max_attempts?: number;
  timeout_ms?: number;
  retry?: NormalizedRetry;
  ignore_cancelled_deps?: boolean;
  ignore_discarded_deps?: boolean;
  ignore_deleted_deps?: boolean;
  ignore_skipped_deps?: boolean;
  concurrency?: NormalizedConcurrency;
  fairness?: NonNullable<NormalizedFlow['fairness']>;
  rate_limit?: NonNullable<NormalizedFlow['rate_limit']>;
}

export interface NormalizedRetry {
  backoff: 'exponential' | 'linear' | 'constant';
  initial_ms: number;
  max_ms: number;
  jitter: boolean;
  /** Present only when declared (the runtime's default then applies: output_invalid), so other definitions keep their hash. */
  non_retryable?: string[];
}

export interface NormalizedTask {
  name: string;
  kind: string;
  description?: string;
  args: Record<string, unknown>;
  deps: string[];
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_ms: number | null;
  delay_ms?: number;
  scheduled_at?: string;
  retry: NormalizedRetry;
  ignore_cancelled_deps: boolean;
  ignore_discarded_deps: boolean;
  ignore_deleted_deps: boolean;
  /** Present only when true, so definitions that do not use it keep their hash. */
  ignore_skipped_deps?: true;
  /** The task's condition (raw CEL), when it has one. */
  when?: string;
  for_each?: string | unknown[];
  key?: string;
  start?: NormalizedStart;
  wait?: NormalizedWait;
  metadata: Record<string, unknown>;
  /** The task's name in earlier versions, when it says (absent otherwise, so other definitions keep their hash). */
  renamed_from?: string;
  /** The JSON Schema of the handler's output, the task's own or its kind's from the project config (absent without one). */
  returns?: Record<string, unknown>;
  /** The largest output its handler may return, in bytes (absent: the runtime's default, 1 MiB). */
  max_output?: number;
  /** Its flow control (its own, else `defaults:`, else the workflow's fairness and rate limit), when any applies. */
  flow?: NormalizedFlow;
  /** Its handler's output streams by name, each chunk's JSON Schema when it gives one (absent without streams). */
  streams?: Record<string, { schema?: Record<string, unknown> }>;
}

export interface NormalizedStart {
  workflow: string;
  inputs: Record<string, unknown>;
  for_each?: string | unknown[];
  group: string;
}

/** The kind of the runtime's built-in handler that runs `start` tasks. */
export const START_KIND = 'braid.start';

export const BUILTIN_DEFAULTS = {
  queue: 'default',
  priority: 2,
  max_attempts: 25,
  retry: { backoff: 'exponential', initial_ms: 1000, max_ms: 3_600_000, jitter: true } satisfies NormalizedRetry,
} as const;

/** Only called on definitions that validated without errors. */
export function normalizeDefinition(def: Definition): NormalizedDefinition {
  const out: NormalizedDefinition = { format: 1, name: def.name!, tasks: def.tasks.map((t) => normalizeTask(def, t)) };
  if (def.description !== undefined) out.description = def.description;
  if (def.inputs !== undefined) out.inputs = def.inputs;
  if (def.output !== undefined) out.output = def.output;
  if (def.timeout !== undefined) out.timeout_ms = ms(def.timeout);
  const defaults = normalizeDefaults(def);
  if (Object.keys(defaults).length > 0) out.defaults = defaults;
  if (def.schedules.length > 0) out.schedules = def.schedules.map(normalizeSchedule);
  if (def.concurrency) out.concurrency = normalizeConcurrency(def.concurrency);
  if (def.debounce) out.debounce = { key: def.debounce.key!, quiet_ms: ms(def.debounce.quiet)! };
  const hook = def.on_failure;
  if (hook?.start) out.on_failure = { start: { workflow: hook.start.workflow!, inputs: hook.start.inputs ?? {} } };
  if (out.on_failure && hook?.window !== undefined)
    out.on_failure.group = { ...(hook.group_by !== undefined ? { by: hook.group_by } : {}), window_ms: ms(hook.window)! };
  const failed = def.retention?.failed;
  if (failed !== undefined) out.retention = { failed_ms: failed === 'keep' ? null : ms(failed)! };
  if (def.triggers.length > 0)
    out.triggers = def.triggers.map((t) => ({
      event: t.event!,
      ...(t.where !== undefined ? { where: t.where } : {}),
      ...(t.id !== undefined ? { id: t.id } : {}),
      inputs: t.inputs ?? {},
      ...(t.schema !== undefined ? { schema: t.schema } : {}),
    }));
  return out;
}

function normalizeConcurrency(c: ConcurrencyDef): NormalizedConcurrency {
  return { key: c.key!, limit: c.limit! };
}

function normalizeFairness(f: FairnessDef): NonNullable<NormalizedFlow['fairness']> {
  return { key: f.key!, weight: f.weight ?? 1 };
}

function normalizeRateLimit(r: RateLimitDef): NonNullable<NormalizedFlow['rate_limit']> {
  return { key: r.key!, limit: r.limit!, per_ms: ms(r.per)! };
}

/** A task's flow control: each control its own, else the defaults', else (fairness, rate limit) the workflow's. */
function taskFlow(def: Definition, task: TaskDef): NormalizedFlow | undefined {
  const d = def.defaults;
  const concurrency = task.concurrency ?? d.concurrency;
  const fairness = task.fairness ?? d.fairness ?? def.fairness;
  const rate = task.rate_limit ?? d.rate_limit ?? def.rate_limit;
  const flow: NormalizedFlow = {
    ...(concurrency ? { concurrency: normalizeConcurrency(concurrency) } : {}),
    ...(fairness ? { fairness: normalizeFairness(fairness) } : {}),
    ...(rate ? { rate_limit: normalizeRateLimit(rate) } : {}),
  };
  return Object.keys(flow).length > 0 ? flow : undefined;
}

export function normalizeSchedule(s: ScheduleDef): NormalizedSchedule {
  const out: NormalizedSchedule = {
    name: s.name!,
    ...(s.cron !== undefined ? { cron: s.cron } : { every_ms: ms(s.every!)! }),
    timezone: s.timezone ?? 'UTC',
    dst: { ...DEFAULT_DST, ...definedOnly(s.dst ?? {}) },
    inputs: s.inputs ?? {},
    overlap: s.overlap ?? 'skip',
    catchup_ms: ms(s.catchup) ?? 0,
    jitter_ms: ms(s.jitter) ?? 0,
    paused: s.paused ?? false,
  };
  if (s.description !== undefined) out.description = s.description;
  if (s.start_at !== undefined) out.start_at = new Date(s.start_at).toISOString();
  if (s.end_at !== undefined) out.end_at = new Date(s.end_at).toISOString();
  return out;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function definitionHash(normalized: NormalizedDefinition): string {
  return sha256Hex(canonicalJson(normalized));
}

function ms(duration: string | undefined): number | undefined {
  return duration === undefined ? undefined : parseDuration(duration);
}

function normalizeTask(def: Definition, task: TaskDef): NormalizedTask {
  const d = def.defaults;
  const timeout = task.timeout ?? d.timeout;
  const out: NormalizedTask = {
    name: task.name,
    kind: task.start ? START_KIND : task.kind!,
    args: task.args ?? {},
    deps: [...task.deps],
    queue: task.queue ?? d.queue ?? BUILTIN_DEFAULTS.queue,
    priority: task.priority ?? d.priority ?? BUILTIN_DEFAULTS.priority,
    max_attempts: task.max_attempts ?? d.max_attempts ?? BUILTIN_DEFAULTS.max_attempts,
    timeout_ms: ms(timeout) ?? null,
    retry: normalizeRetry(task.retry ?? d.retry),
    ignore_cancelled_deps: task.ignore_cancelled_deps ?? d.ignore_cancelled_deps ?? false,
    ignore_discarded_deps: task.ignore_discarded_deps ?? d.ignore_discarded_deps ?? false,
    ignore_deleted_deps: task.ignore_deleted_deps ?? d.ignore_deleted_deps ?? false,
    metadata: task.metadata ?? {},
  };
  if (task.description !== undefined) out.description = task.description;
  if ((task.ignore_skipped_deps ?? d.ignore_skipped_deps) === true) out.ignore_skipped_deps = true;
  if (task.when !== undefined) out.when = task.when;
  if (task.renamed_from !== undefined) out.renamed_from = task.renamed_from;
  if (task.returns !== undefined) out.returns = task.returns;
  if (task.max_output !== undefined) out.max_output = parseSize(task.max_output);
  if (task.streams !== undefined) out.streams = task.streams;
  const flow = taskFlow(def, task);
  if (flow) out.flow = flow;
  if (task.delay !== undefined) out.delay_ms = ms(task.delay);
  if (task.scheduled_at !== undefined) out.scheduled_at = task.scheduled_at;
  if (task.for_each !== undefined) out.for_each = task.for_each;
  if (task.key !== undefined) out.key = task.key;
  if (task.start) {
    out.start = { workflow: task.start.workflow!, inputs: task.start.inputs ?? {}, group: task.start.group ?? task.name };
    if (task.start.for_each !== undefined) out.start.for_each = task.start.for_each;
  }
  if (task.wait) {
    const terms = task.wait.terms.map((term) => normalizeTerm(task.name, term));
    out.wait = {
      expr: task.wait.expr ?? terms[0].name,
      terms,
      signals: [...task.wait.signals],
      timers: task.wait.timers.map(normalizeTimer),
    };
  }
  return out;
}

/** The defaults that differ from the built-in ones (spelling a built-in default out changes nothing, not even the hash). */
function normalizeDefaults(def: Definition): NormalizedDefaults {
  const d = def.defaults;
  const out: NormalizedDefaults = {};
  if (d.concurrency) out.concurrency = normalizeConcurrency(d.concurrency);
  const fairness = d.fairness ?? def.fairness;
  if (fairness) out.fairness = normalizeFairness(fairness);
  const rate = d.rate_limit ?? def.rate_limit;
  if (rate) out.rate_limit = normalizeRateLimit(rate);
  if (d.queue !== undefined && d.queue !== BUILTIN_DEFAULTS.queue) out.queue = d.queue;
  if (d.priority !== undefined && d.priority !== BUILTIN_DEFAULTS.priority) out.priority = d.priority;
  if (d.max_attempts !== undefined && d.max_attempts !== BUILTIN_DEFAULTS.max_attempts) out.max_attempts = d.max_attempts;
  if (d.timeout !== undefined) out.timeout_ms = ms(d.timeout);
  if (d.retry !== undefined) {
    const retry = normalizeRetry(d.retry);
    const base = BUILTIN_DEFAULTS.retry;
    const differs = retry.backoff !== base.backoff || retry.initial_ms !== base.initial_ms || retry.max_ms !== base.max_ms || retry.jitter !== base.jitter;
    if (differs || retry.non_retryable !== undefined) out.retry = retry;
  }
  for (const flag of ['ignore_cancelled_deps', 'ignore_discarded_deps', 'ignore_deleted_deps', 'ignore_skipped_deps'] as const)
    if (d[flag] === true) out[flag] = true;
  return out;
}

/** Normalized defaults back in the definition language (durations as ms), for definitions written from them. */
export function defaultsAsWritten(d: NormalizedDefaults): Record<string, unknown> {
  const { timeout_ms, retry, rate_limit, ...rest } = d;
  return {
    ...rest,
    ...(rate_limit !== undefined ? { rate_limit: { key: rate_limit.key, limit: rate_limit.limit, per: `${rate_limit.per_ms}ms` } } : {}),
    ...(timeout_ms !== undefined ? { timeout: `${timeout_ms}ms` } : {}),
    ...(retry !== undefined
      ? {
          retry: {
            backoff: retry.backoff,
            initial: `${retry.initial_ms}ms`,
            max: `${retry.max_ms}ms`,
            jitter: retry.jitter,
            ...(retry.non_retryable !== undefined ? { non_retryable: retry.non_retryable } : {}),
          },
        }
      : {}),
  };
}

function normalizeRetry(r: RetryDef | undefined): NormalizedRetry {
  const base = BUILTIN_DEFAULTS.retry;
  return {
    backoff: r?.backoff ?? base.backoff,
    initial_ms: ms(r?.initial) ?? base.initial_ms,
    max_ms: ms(r?.max) ?? base.max_ms,
    jitter: r?.jitter ?? base.jitter,
    ...(r?.non_retryable !== undefined ? { non_retryable: [...new Set(r.non_retryable)] } : {}),
  };
}
