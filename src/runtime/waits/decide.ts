/**
 * Whether a wait is true, as pure functions over its inputs: signal rows, timer fire times, deps' outputs.
 * The runtime loads the inputs under the workflow's lock and applies the outcome; diagnostics call the same
 * functions without writing; tests call them directly.
 */
import { canonicalJson } from '../../compiler/canonical-json.js';
import { evaluateRaw } from '../../compiler/cel/evaluate.js';
import { fromCelValue } from '../../compiler/cel/types.js';
import type { PlanTerm, PlanTimer, PlanWait } from '../../compiler/plan.js';
import type { AwaitedWorkflow, SignalRow, SignalTermProgress, TermKind, TermValue, WaitPhase, WorkflowsOutcome } from '../wire/index.js';

export type { AwaitedWorkflow, SignalRow, SignalTermProgress, TermKind, TermValue, WaitPhase, WorkflowsOutcome };

export interface WaitOutcome {
  result: boolean;
  /** The combining expression's own error (a term's error is on the term). */
  error?: string;
  terms: TermValue[];
}

/** Everything a generic (`expr`) term reads, already in CEL form. */
export interface GenericContext {
  inputs: unknown;
  deps: Record<string, unknown>;
  signals: Record<string, unknown[]>;
  timers: Record<string, { fire_at: Date | null; fired: boolean }>;
  workflow: Record<string, unknown>;
  workflows: Record<string, unknown>;
}

export interface WaitInputs {
  now: Date;
  /** Progress of each signal term, by term name. */
  signalTerms: Record<string, SignalTermProgress>;
  /** Fire time of each timer (terms and `wait.timers`), by name; null when its anchor is not known yet. */
  timers: Record<string, Date | null>;
  /** Present when the wait has generic terms. */
  generic?: GenericContext;
  /** Each workflows term's awaited workflows (ids resolved when the wait became active) and what was decided. */
  workflowTerms?: Record<string, WorkflowsTermInput>;
}

export interface WorkflowsTermInput {
  ids: string[];
  awaited: AwaitedWorkflow[];
  /** Recorded once decided; never changes afterwards. */
  decided?: 'satisfied' | 'failed';
  /** Why the ids could not be resolved. */
  error?: string;
}

/**
 * Success-oriented outcome of waiting on workflows. all: satisfied when every one completed, failed when any
 * failed or was cancelled. any: satisfied at the first completion, failed only when all are final and none
 * completed. quorum N: satisfied at N completions, failed when those still running can no longer reach N.
 */
export function workflowsOutcome(mode: 'all' | 'any' | 'quorum', quorum: number | undefined, states: readonly (string | null)[]): WorkflowsOutcome {
  const completed = states.filter((s) => s === 'completed').length;
  const failed = states.filter((s) => s === 'failed' || s === 'cancelled').length;
  const open = states.length - completed - failed;
  switch (mode) {
    case 'all':
      if (failed > 0) return 'failed';
      return completed === states.length ? 'satisfied' : 'undecided';
    case 'any':
      if (completed > 0) return 'satisfied';
      return open === 0 ? 'failed' : 'undecided';
    case 'quorum': {
      const n = quorum ?? 1;
      if (completed >= n) return 'satisfied';
      return completed + open < n ? 'failed' : 'undecided';
    }
  }
}

/** How many completions a workflows term needs. */
export function workflowsRequired(mode: 'all' | 'any' | 'quorum', quorum: number | undefined, count: number): number {
  return mode === 'all' ? count : mode === 'any' ? 1 : (quorum ?? 1);
}

export const EMPTY_PROGRESS: SignalTermProgress = { cursor: '0', matched: [] };

/** Every timer a wait declares: its timer terms (named after the term) and `wait.timers`. */
export function declaredTimers(wait: PlanWait): PlanTimer[] {
  return [...wait.terms.flatMap((t) => (t.kind === 'timer' ? [{ ...t.timer, name: t.name }] : [])), ...wait.timers];
}

/** The fields of a signal row a `where` predicate and a generic term see. */
export function signalCel(row: SignalRow): Record<string, unknown> {
  return {
    id: BigInt(row.id),
    attempt: BigInt(row.attempt),
    key: row.key,
    payload: row.payload,
    source: row.source ?? null,
    created_at: new Date(row.created_at),
  };
}

/**
 * Feeds a signal term the rows of its key emitted since its cursor (ascending ids). A row matches when the
 * `where` predicate is true; a predicate that fails on a row (a missing field, a wrong type) skips that row
 * and is recorded, so a later good signal can still satisfy the term. With `distinct`, a matching row counts
 * only when its value of the expression was not counted before (first come, first counted). Once `count`
 * rows counted the term is true for good: signals are facts and never go away within an attempt.
 */
export function scanSignalTerm(
  term: Extract<PlanTerm, { kind: 'signal' }>,
  progress: SignalTermProgress,
  rows: readonly SignalRow[],
  /** What a predicate reads besides the row: the workflow's inputs. */
  scope: Record<string, unknown> = {},
): SignalTermProgress {
  let { cursor, error } = progress;
  const matched = [...progress.matched];
  const distinct = [...(progress.distinct ?? [])];
  for (const row of rows) {
    if (BigInt(row.id) <= BigInt(cursor)) continue;
    cursor = row.id;
    if (matched.length >= term.count || (row.key !== term.signal && row.key !== term.renamed_from)) continue;
    const fields = { ...scope, ...signalCel(row) };
    try {
      if (term.where !== undefined) {
        const v = evaluateRaw(term.where, fields);
        if (typeof v !== 'boolean') error = `signal ${row.id}: the predicate returned ${describe(v)}, not a bool`;
        if (v !== true) continue;
      }
      if (term.distinct !== undefined) {
        const value = canonicalJson(fromCelValue(evaluateRaw(term.distinct, fields)));
        if (distinct.includes(value)) continue;
        distinct.push(value);
      }
      matched.push(row.id);
    } catch (e) {
      error = `signal ${row.id}: ${celMessage(e)}`;
    }
  }
  return { cursor, matched, ...(term.distinct !== undefined ? { distinct } : {}), ...(error === undefined ? {} : { error }) };
}

/** Where a timer fires, once its anchor is known. */
export function timerFireAt(
  timer: PlanTimer,
  anchors: { attemptStartedAt: Date; waitStartedAt: Date | null; depFinalizedAt: (task: string) => Date | null },
): Date | null {
  switch (timer.anchor) {
    case 'at':
      return new Date(timer.at);
    case 'workflow_created':
      return new Date(anchors.attemptStartedAt.getTime() + timer.after_ms);
    case 'wait_started':
      return anchors.waitStartedAt && new Date(anchors.waitStartedAt.getTime() + timer.after_ms);
    case 'task_finalized': {
      const at = anchors.depFinalizedAt(timer.task);
      return at && new Date(at.getTime() + timer.after_ms);
    }
  }
}

/** Evaluates each term, then the combining expression over the terms' values. Never throws. */
export function evaluateWait(wait: PlanWait, inputs: WaitInputs): WaitOutcome {
  const terms = wait.terms.map((term) => evaluateTerm(term, inputs));
  const values = Object.fromEntries(terms.map((t) => [t.name, t.value]));
  try {
    const v = evaluateRaw(wait.expr, values);
    if (typeof v !== 'boolean') return { result: false, error: `the expression returned ${describe(v)}, not a bool`, terms };
    return { result: v, terms };
  } catch (e) {
    return { result: false, error: celMessage(e), terms };
  }
}

function evaluateTerm(term: PlanTerm, inputs: WaitInputs): TermValue {
  const base = { name: term.name, kind: term.kind, ...(term.label !== undefined ? { label: term.label } : {}) };
  switch (term.kind) {
    case 'signal': {
      const p = inputs.signalTerms[term.name] ?? EMPTY_PROGRESS;
      const value = p.matched.length >= term.count;
      return {
        ...base,
        value,
        matched: p.matched.length,
        required: term.count,
        ...(term.distinct !== undefined ? { distinct: (p.distinct ?? []).map((v) => JSON.parse(v) as unknown) } : {}),
        signal_ids: p.matched,
        ...(!value && p.error ? { error: p.error } : {}),
      };
    }
    case 'timer': {
      const at = inputs.timers[term.name] ?? null;
      const fired = at !== null && at.getTime() <= inputs.now.getTime();
      return { ...base, value: fired, fire_at: at === null ? null : at.toISOString(), fired };
    }
    case 'expr': {
      if (!inputs.generic) return { ...base, value: false, error: 'no inputs to evaluate against' };
      try {
        const v = evaluateRaw(term.expr, inputs.generic as unknown as Record<string, unknown>);
        if (typeof v !== 'boolean') return { ...base, value: false, error: `returned ${describe(v)}, not a bool` };
        return { ...base, value: v };
      } catch (e) {
        return { ...base, value: false, error: celMessage(e) };
      }
    }
    case 'workflows': {
      const input = inputs.workflowTerms?.[term.name];
      if (!input) return { ...base, value: false, error: 'the awaited workflows are not known yet' };
      const { mode, quorum } = term.workflows;
      const states = input.ids.map((id) => input.awaited.find((a) => a.id === id)?.state ?? null);
      const outcome = input.decided ?? (input.error ? 'undecided' : workflowsOutcome(mode, quorum, states));
      return {
        ...base,
        value: outcome === 'satisfied',
        outcome,
        ids: input.ids,
        completed: states.filter((s) => s === 'completed').length,
        failed: states.filter((s) => s === 'failed' || s === 'cancelled').length,
        required: workflowsRequired(mode, quorum, input.ids.length),
        on_failure: term.workflows.on_failure,
        ...(input.error ? { error: input.error } : {}),
      };
    }
  }
}

/** The CEL form of each declared timer for generic terms. */
export function timersCel(timers: Record<string, Date | null>, now: Date): Record<string, { fire_at: Date | null; fired: boolean }> {
  return Object.fromEntries(Object.entries(timers).map(([name, at]) => [name, { fire_at: at, fired: at !== null && at.getTime() <= now.getTime() }]));
}

function celMessage(e: unknown): string {
  const summary = (e as { summary?: string }).summary;
  return summary ?? String((e as Error)?.message ?? e).split('\n')[0];
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (v instanceof Date) return 'a timestamp';
  if (typeof v === 'object') return 'a map';
  return `${typeof v === 'bigint' ? 'int' : typeof v} ${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`;
}
