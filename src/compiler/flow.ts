/**
 * Flow control at instantiation: each key and count a task (or its workflow) declares, evaluated once over
 * the names the CEL pass checked them against (inputs, workflow, args, item, index), to the values the
 * runtime's claim enforces. What the runtime stores per task is the plan's `flow`.
 */
import { evaluateRaw } from './cel/evaluate.js';
import type { NormalizedConcurrency, NormalizedFlow } from './normalize.js';

/** A task's flow control with its keys and counts resolved (present only when the task has some). */
export interface PlanFlow {
  /** At most `limit` of its key's attempts in flight. */
  concurrency?: { key: string; limit: number };
  /** At most `limit` runs of its key with a task in flight (the workflow's concurrency, on each of its tasks). */
  workflow_concurrency?: { key: string; limit: number };
  /** Its queue's available tasks are handed out round-robin between keys, `weight` turns each. */
  fairness?: { key: string; weight: number };
  /** At most `limit` starts of its key in any window of `per_ms`. */
  rate_limit?: { key: string; limit: number; per_ms: number };
}

/** Keys are stored and compared as text: a longer one is a mistake (a whole document as a key). */
export const FLOW_KEY_MAX = 256;
/** A count above this is no limit at all, and would not fit the claim's arithmetic (the schema's maximum). */
export const COUNT_MAX = 1_000_000;
/** A rate limit's window: shorter than a second is no rate a claim can keep; longer than a day, a quota. */
export const RATE_WINDOW_MIN_MS = 1000;
export const RATE_WINDOW_MAX_MS = 86_400_000;

export type FlowProblem = (path: (string | number)[], message: string) => void;

/** Resolves the flow control of one task; undefined when a key or count failed (reported through `problem`). */
export function resolveFlow(
  flow: NormalizedFlow | undefined,
  workflow: NormalizedConcurrency | undefined,
  context: Record<string, unknown>,
  taskPath: (string | number)[],
  problem: FlowProblem,
): PlanFlow | undefined | typeof FLOW_FAILED {
  if (!flow && !workflow) return undefined;
  const out: PlanFlow = {};
  let failed = false;
  /** Records a problem (none when evaluation already reported one) and returns a placeholder. */
  const fail = <T>(placeholder: T, path: (string | number)[], message?: string): T => {
    failed = true;
    if (message !== undefined) problem(path, message);
    return placeholder;
  };
  const key = (expr: string, path: (string | number)[]): string => {
    const v = evaluate(expr, context, path, problem);
    if (v === FLOW_FAILED) return fail('', path);
    if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) return String(v);
    if (typeof v !== 'string') return fail('', path, `the key yielded ${describe(v)}, not a string or an int`);
    if (v.length > FLOW_KEY_MAX) return fail('', path, `the key is ${v.length} characters long, over ${FLOW_KEY_MAX}`);
    return v;
  };
  const count = (value: number | string, path: (string | number)[]): number => {
    const v = typeof value === 'number' ? value : evaluate(value, context, path, problem);
    if (v === FLOW_FAILED) return fail(1, path);
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > COUNT_MAX)
      return fail(1, path, `yielded ${describe(v)}, not an integer from 1 to ${COUNT_MAX}`);
    return n;
  };
  if (flow?.concurrency) {
    const c = flow.concurrency;
    out.concurrency = { key: key(c.key, [...taskPath, 'concurrency', 'key']), limit: count(c.limit, [...taskPath, 'concurrency', 'limit']) };
  }
  if (workflow) out.workflow_concurrency = { key: key(workflow.key, ['concurrency', 'key']), limit: count(workflow.limit, ['concurrency', 'limit']) };
  if (flow?.fairness) {
    const f = flow.fairness;
    out.fairness = { key: key(f.key, [...taskPath, 'fairness', 'key']), weight: count(f.weight, [...taskPath, 'fairness', 'weight']) };
  }
  if (flow?.rate_limit) {
    const r = flow.rate_limit;
    // static, and ranged at validate; checked again for versions registered before the ranges were
    const limit = count(r.limit, [...taskPath, 'rate_limit', 'limit']);
    const perMs =
      r.per_ms >= RATE_WINDOW_MIN_MS && r.per_ms <= RATE_WINDOW_MAX_MS
        ? r.per_ms
        : fail(RATE_WINDOW_MIN_MS, [...taskPath, 'rate_limit', 'per'], `the window is ${r.per_ms}ms, not from 1s to 1d`);
    out.rate_limit = { key: key(r.key, [...taskPath, 'rate_limit', 'key']), limit, per_ms: perMs };
  }
  return failed ? FLOW_FAILED : out;
}

/** A debounce key over the start's inputs (its context is `{ inputs }`), as text. Throws with a message when it yields no key. */
export function debounceKeyOf(expr: string, inputs: unknown): string {
  let v: unknown;
  try {
    v = evaluateRaw(expr, { inputs });
  } catch (error) {
    throw new Error(`debounce key: ${celMessage(error)}`);
  }
  if (typeof v === 'bigint') return String(v);
  if (typeof v !== 'string') throw new Error(`debounce key yielded ${describe(v)}, not a string or an int`);
  if (v.length > FLOW_KEY_MAX) throw new Error(`debounce key is ${v.length} characters long, over ${FLOW_KEY_MAX}`);
  return v;
}

export const FLOW_FAILED = Symbol('flow failed');

function evaluate(expr: string, context: Record<string, unknown>, path: (string | number)[], problem: FlowProblem): unknown {
  try {
    return evaluateRaw(expr, context);
  } catch (error) {
    problem(path, `failed: ${celMessage(error)}`);
    return FLOW_FAILED;
  }
}

function celMessage(error: unknown): string {
  return (error as { summary?: string }).summary ?? String((error as Error).message ?? error).split('\n')[0];
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return `int ${v}`;
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return `${typeof v} ${JSON.stringify(v)}`;
}
