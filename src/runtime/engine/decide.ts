/**
 * The runtime's decisions, as pure functions: what a finalized dep means for its dependent, when a task
 * may run, how long a retry waits, how a workflow ends. The engine applies them, and sql/rules.ts writes the
 * ones that set-based statements need in SQL; tests call them directly, and run both over one table.
 */
import { type FinalState, isFinal, type RetryMode, type TaskState, type WorkflowState } from '../wire/index.js';

export { type FinalState, isFinal, type TaskState };

export interface IgnoreFlags {
  ignore_cancelled_deps: boolean;
  ignore_discarded_deps: boolean;
  ignore_deleted_deps: boolean;
  ignore_skipped_deps: boolean;
}

/**
 * A dep's final state ('deleted' when its row is gone) satisfies its dependent, fails it, or skips it (a
 * skipped dep skips its dependents, unless they ignore skipped deps and read its output as null).
 */
export function depOutcome(dependent: IgnoreFlags, dep: FinalState | 'deleted'): 'satisfied' | 'failed' | 'skipped' {
  switch (dep) {
    case 'completed':
      return 'satisfied';
    case 'skipped':
      return dependent.ignore_skipped_deps ? 'satisfied' : 'skipped';
    case 'cancelled':
      return dependent.ignore_cancelled_deps ? 'satisfied' : 'failed';
    case 'discarded':
      return dependent.ignore_discarded_deps ? 'satisfied' : 'failed';
    case 'deleted':
      return dependent.ignore_deleted_deps ? 'satisfied' : 'failed';
  }
}

/**
 * Where a pending task goes once nothing but its wait and schedule hold it (sql/rules.ts readyStateSql).
 * `held`: a wait, or a condition not yet decided, keeps it pending once its deps are done.
 */
export function readyState(task: { deps_left: number; held: boolean; wait_satisfied?: boolean; scheduled_at: Date }, now: Date): TaskState {
  if (task.deps_left > 0) return 'pending';
  if (task.held && !task.wait_satisfied) return 'pending';
  return dueState(task.scheduled_at, now);
}

/** A task free to run waits for its time: scheduled until then, available from then on. */
export function dueState(scheduledAt: Date, now: Date): 'scheduled' | 'available' {
  return scheduledAt.getTime() > now.getTime() ? 'scheduled' : 'available';
}

/**
 * What the finalized deps of a task mean for it together: one failed dep fails it (a cancel wins over a skip),
 * else one skipped dep skips it, else it is free to go on. The first dep that decided it is named.
 */
export function depsOutcome(
  dependent: IgnoreFlags,
  deps: readonly { name: string; state: FinalState | 'deleted' }[],
): { outcome: 'satisfied' | 'failed' | 'skipped'; dep?: { name: string; state: string } } {
  const outcomes = deps.map((d) => ({ d, o: depOutcome(dependent, d.state) }));
  const decisive = outcomes.find((x) => x.o === 'failed') ?? outcomes.find((x) => x.o === 'skipped');
  return decisive ? { outcome: decisive.o, dep: decisive.d } : { outcome: 'satisfied' };
}

/** A task's condition decides: true runs it, false skips it; anything else is an error (the task is discarded). */
export function conditionOutcome(value: unknown): { run: boolean } | { error: string } {
  if (typeof value === 'boolean') return { run: value };
  return { error: `when: the condition yielded ${value === null ? 'null' : typeof value}, not a bool` };
}

/** A final state that is a failure: the task neither completed nor can run again without a retry. */
export function isFailed(state: string): boolean {
  return state === 'cancelled' || state === 'discarded';
}

export interface RetryPolicy {
  backoff: 'exponential' | 'linear' | 'constant';
  initial_ms: number;
  max_ms: number;
  jitter: boolean;
  /** Error codes that end the task at once; absent: DEFAULT_NON_RETRYABLE. */
  non_retryable?: string[];
}

/**
 * The retry policy of a task that declares none, stored as NULL: the compiler's BUILTIN_DEFAULTS.retry (a test
 * holds the two equal; the runtime does not load the compiler for it).
 */
export const DEFAULT_RETRY: RetryPolicy = { backoff: 'exponential', initial_ms: 1000, max_ms: 3_600_000, jitter: true };

/** Whether a policy is the default one (a task on it stores none). */
export function isDefaultRetry(p: RetryPolicy): boolean {
  return (
    p.backoff === DEFAULT_RETRY.backoff &&
    p.initial_ms === DEFAULT_RETRY.initial_ms &&
    p.max_ms === DEFAULT_RETRY.max_ms &&
    p.jitter === DEFAULT_RETRY.jitter &&
    p.non_retryable === undefined
  );
}

/** The wait before attempt `attempt + 1`, after attempt `attempt` failed. Jitter spreads it over [50%, 100%]. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const n = Math.max(1, attempt);
  const base =
    policy.backoff === 'exponential' ? policy.initial_ms * 2 ** Math.min(n - 1, 40) : policy.backoff === 'linear' ? policy.initial_ms * n : policy.initial_ms;
  const capped = Math.min(base, policy.max_ms);
  return Math.round(policy.jitter ? capped * (0.5 + random() * 0.5) : capped);
}

/**
 * The jitter of one attempt's backoff, in [0, 1): a hash of the workflow, task and attempt rather than a
 * random draw, so retries still spread across tasks while the same attempt always waits the same (a
 * workflow test's virtual times repeat from run to run).
 */
export function attemptJitter(ref: { workflowId: string; name: string; attempt: number }): () => number {
  let h = 0x811c9dc5;
  for (const ch of `${ref.workflowId}\u0000${ref.name}\u0000${ref.attempt}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return () => h / 2 ** 32;
}

/** Errors no retry can mend: the same attempt would fail the same way (an output over max_output is too large again). */
export const NOT_RETRIED: ReadonlySet<string> = new Set(['output_too_large']);

/** The codes a task's failures end at once when its retry policy names none: an output that breaks `returns` breaks it again. */
export const DEFAULT_NON_RETRYABLE: readonly string[] = ['output_invalid'];

/** Why a failure is not to be retried, whatever attempts are left; undefined when it may be. */
export function notRetried(error: { code?: string; no_retry?: boolean }, retry: { non_retryable?: readonly string[] } | null | undefined): string | undefined {
  if (error.no_retry) return 'the handler said no retry can mend it';
  if (error.code === undefined) return undefined;
  if (NOT_RETRIED.has(error.code)) return `${error.code} is never retried: it would fail the same way`;
  const list = retry?.non_retryable;
  if (list === undefined)
    return DEFAULT_NON_RETRYABLE.includes(error.code) ? `${error.code} is not retried by default (retry: { non_retryable: [] } retries it)` : undefined;
  return list.includes(error.code) ? `${error.code} is in the task's retry.non_retryable` : undefined;
}

/** After an attempt fails: try again later, or give up for good (saying why, when attempts were left). */
export function failureEnd(
  task: { attempt: number; max_attempts: number; cancel_requested: boolean; retry?: { non_retryable?: readonly string[] } | null },
  error: { code?: string; no_retry?: boolean } = {},
): { next: 'retryable' | 'discarded' | 'cancelled'; notRetried?: string } {
  if (task.cancel_requested) return { next: 'cancelled' };
  if (task.attempt >= task.max_attempts) return { next: 'discarded' };
  const why = notRetried(error, task.retry);
  return why === undefined ? { next: 'retryable' } : { next: 'discarded', notRetried: why };
}

/** How a workflow ends once none of its tasks is open (sql/rules.ts finalWorkflowStateSql). */
export function finalWorkflowState(w: { cancel_requested: boolean; tasks_failed: number; end_reason?: string | null }): Exclude<WorkflowState, 'running'> {
  // a timeout cancels the open tasks as a cancel does, but the workflow failed: it did not finish in time
  if (w.end_reason === 'timeout') return 'failed';
  if (w.cancel_requested) return 'cancelled';
  return w.tasks_failed > 0 ? 'failed' : 'completed';
}

export type { RetryMode };

/**
 * Which tasks a whole-workflow retry runs again. all: every task. failed_only: the cancelled and discarded
 * tasks, and the tasks downstream of them that did not complete. failed_and_downstream: those and every task
 * downstream of them, completed or not.
 */
export function retrySelection(tasks: readonly { name: string; state: string; dependents: readonly string[] }[], mode: RetryMode): Set<string> {
  if (mode === 'all') return new Set(tasks.map((t) => t.name));
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const failed = tasks.filter((t) => isFailed(t.state)).map((t) => t.name);
  const selected = new Set(failed);
  const stack = [...failed];
  while (stack.length > 0) {
    for (const d of byName.get(stack.pop()!)?.dependents ?? []) {
      const dependent = byName.get(d);
      if (!dependent || selected.has(d)) continue;
      if (mode === 'failed_only' && dependent.state === 'completed') continue;
      selected.add(d);
      stack.push(d);
    }
  }
  return selected;
}
