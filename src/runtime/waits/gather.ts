/**
 * What waits read: for each waiting task of one workflow (lock held), its signal terms continued from their
 * stored progress, the declared keys' rows for generic terms, timers, deps' outputs and the workflows its
 * workflows terms await. decide.ts decides with what this gathers.
 */

import { baseContext, waitWorkflow } from '../../compiler/cel/context.js';
import { renderTemplates } from '../../compiler/cel/evaluate.js';
import { declaredKeys, termKeys } from '../../compiler/declared-keys.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { expandedDeps, tasksContext } from '../core/scopes.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import {
  type DepRow,
  loadAwaited,
  loadDepRows,
  loadTimers,
  registerWaiters,
  signalsAfter,
  type TimerRow,
  type WaitingTask,
  type WaitWorkflow,
  waitProgress,
} from '../sql/waits.js';
import {
  declaredTimers,
  EMPTY_PROGRESS,
  type SignalRow,
  type SignalTermProgress,
  scanSignalTerm,
  signalCel,
  timerFireAt,
  timersCel,
  type WaitInputs,
  type WorkflowsTermInput,
} from './decide.js';

/** Signal rows read per query; generic terms see at most the scan limit of each declared key. */
const PAGE = 10_000;

/** A signal just stored under the workflow's lock, and the last id of its key before it. */
export interface Emitted {
  row: SignalRow;
  previousId: string;
}

export interface Gathered {
  inputs: WaitInputs;
  /** Rows each declared key contributed to generic terms. */
  genericSignals: Record<string, SignalRow[]>;
  depOutputs: Record<string, unknown>;
  truncated: boolean;
  signalsScanned: number;
}

/**
 * Loads what each wait reads. Signal terms continue from their stored progress (fromScratch: from the first
 * row, for diagnostics); generic terms get deps' outputs, the declared keys' rows (up to the scan limit),
 * timers and the workflow.
 */
export async function gatherInputs(
  q: Queryable,
  ctx: AdvanceContext,
  w: WaitWorkflow,
  tasks: readonly GatherTask[],
  options: { fromScratch: boolean; scanLimit: number; emitted?: Emitted; register?: boolean; timers?: readonly TimerRow[] },
): Promise<Map<string, Gathered>> {
  const def = await ctx.definitions.find(q, w.name, w.definition_hash);
  const { inputs: celInputs } = baseContext(def, w);
  const scan = await scanSignalTerms(q, ctx, w, tasks, { ...options, scope: { inputs: celInputs } });
  let { scanned, truncated } = scan;
  const signalTerms = scan.progress;
  const timed = tasks.filter((t) => declaredTimers(t.wait).length > 0).map((t) => t.name);
  // a batch read every workflow's timers already
  const timerRows = timed.length === 0 ? [] : (options.timers ?? (await loadTimers(q, ctx.s, w.id, timed)));
  const generic = tasks.filter((t) => t.wait.terms.some((term) => term.kind === 'expr'));
  const awaiting = tasks.filter((t) => t.wait.terms.some((term) => term.kind === 'workflows'));
  const readingDeps = [...new Set([...generic, ...awaiting])];
  const depRows = readingDeps.length > 0 ? await loadDepRows(q, ctx.s, w.id, [...new Set(readingDeps.flatMap((t) => t.deps))]) : [];
  const keyRows = new Map<string, SignalRow[]>();
  for (const key of new Set(generic.flatMap((t) => declaredKeys(t.wait)))) {
    const limit = Math.max(0, options.scanLimit - (options.fromScratch ? scanned : 0));
    const rows = await signalsAfter(q, ctx.s, { workflowId: w.id, keys: [key], attempt: w.attempt, afterId: '0', limit: limit + 1 });
    if (rows.length > limit) truncated = true;
    keyRows.set(key, rows.slice(0, limit));
    scanned += Math.min(rows.length, limit);
  }
  const workflow = waitWorkflow(def, w);
  const workflowTerms = await gatherWorkflowTerms(q, ctx, w, def, awaiting, depRows, options.register === true && !options.fromScratch);
  const out = new Map<string, Gathered>();
  for (const t of tasks) {
    const timers: Record<string, Date | null> = {};
    for (const timer of declaredTimers(t.wait)) {
      const row = timerRows.find((r) => r.task === t.name && r.name === timer.name);
      timers[timer.name] = row
        ? new Date(row.fire_at)
        : timerFireAt(timer, {
            attemptStartedAt: new Date(w.attempt_started_at),
            waitStartedAt: t.wait_started_at && new Date(t.wait_started_at),
            depFinalizedAt: () => null,
          });
    }
    const inputs: WaitInputs = {
      now: ctx.now,
      signalTerms: signalTerms.get(t.name)!,
      timers,
      ...(workflowTerms.has(t.name) ? { workflowTerms: workflowTerms.get(t.name) } : {}),
    };
    const genericSignals: Record<string, SignalRow[]> = {};
    let depOutputs: Record<string, unknown> = {};
    if (generic.includes(t)) {
      for (const key of declaredKeys(t.wait)) genericSignals[key] = keyRows.get(key) ?? [];
      const celSignals = Object.fromEntries(Object.entries(genericSignals).map(([k, rows]) => [k, rows.map(signalCel)]));
      // a callback term's answers also under the term's own name (signals.approve), where no key is spelled so
      for (const term of t.wait.terms)
        if (term.kind === 'signal' && term.callback && !Object.hasOwn(celSignals, term.name))
          celSignals[term.name] = (keyRows.get(term.signal) ?? []).map(signalCel);
      const mine = depRows.filter((r) => t.deps.includes(r.name));
      depOutputs = Object.fromEntries(mine.map((r) => [r.name, r.output]));
      inputs.generic = {
        inputs: celInputs,
        deps: tasksContext(mine, expandedDeps(def, t.template), def),
        signals: celSignals,
        timers: timersCel(timers, ctx.now),
        workflow,
        workflows: Object.fromEntries(Object.entries(inputs.workflowTerms ?? {}).map(([name, input]) => [name, workflowsCel(input)])),
      };
    }
    out.set(t.name, { inputs, genericSignals, depOutputs, truncated, signalsScanned: scanned });
  }
  return out;
}

type GatherTask = Pick<WaitingTask, 'name' | 'template' | 'deps' | 'wait' | 'wait_progress'> & { wait_started_at: Date | null };

/**
 * Signal terms: one pass per key from the lowest cursor any term of that key holds; when the only new row is
 * the one just emitted, that row alone. Diagnostics (fromScratch) start from the first row, up to the scan limit.
 */
async function scanSignalTerms(
  q: Queryable,
  ctx: AdvanceContext,
  w: WaitWorkflow,
  tasks: readonly GatherTask[],
  options: { fromScratch: boolean; scanLimit: number; emitted?: Emitted; scope: Record<string, unknown> },
): Promise<{ progress: Map<string, Record<string, SignalTermProgress>>; scanned: number; truncated: boolean }> {
  let scanned = 0;
  let truncated = false;
  const signalTerms = new Map<string, Record<string, SignalTermProgress>>();
  // terms read the rows of their keys in id order, one cursor each: a term renamed from another key reads both together
  const groups = new Map<string, { keys: string[]; from: bigint }>();
  const groupOf = (term: { signal: string; renamed_from?: string }) => termKeys(term).join('\u0000');
  for (const t of tasks) {
    const progress: Record<string, SignalTermProgress> = {};
    for (const term of t.wait.terms) {
      if (term.kind !== 'signal') continue;
      progress[term.name] = options.fromScratch ? EMPTY_PROGRESS : (t.wait_progress?.signal_terms[term.name] ?? EMPTY_PROGRESS);
      const c = BigInt(progress[term.name].cursor);
      const g = groups.get(groupOf(term));
      groups.set(groupOf(term), { keys: termKeys(term), from: g && g.from < c ? g.from : c });
    }
    signalTerms.set(t.name, progress);
  }
  const apply = (group: string, rows: readonly SignalRow[]): void => {
    scanned += rows.length;
    for (const t of tasks) {
      const progress = signalTerms.get(t.name)!;
      for (const term of t.wait.terms)
        if (term.kind === 'signal' && groupOf(term) === group) progress[term.name] = scanSignalTerm(term, progress[term.name], rows, options.scope);
    }
  };
  for (const [group, { keys, from }] of groups) {
    const emitted = options.emitted;
    if (emitted && keys.length === 1 && emitted.row.key === keys[0] && from >= BigInt(emitted.previousId)) {
      // every term of this key has seen all rows before the one just emitted: that row is all that is new
      apply(group, emitted.row.attempt === w.attempt ? [emitted.row] : []);
      continue;
    }
    for (let after = from.toString(); ; ) {
      const limit = options.fromScratch ? Math.min(PAGE, options.scanLimit - scanned) : PAGE;
      if (limit <= 0) {
        truncated = true;
        break;
      }
      const rows = await signalsAfter(q, ctx.s, { workflowId: w.id, keys, attempt: w.attempt, afterId: after, limit });
      apply(group, rows);
      if (rows.length < limit) break;
      after = rows[rows.length - 1].id;
    }
  }
  return { progress: signalTerms, scanned, truncated };
}

/**
 * Resolves each workflows term's ids — stored ones, or, when the wait has just become active, from the `ids`
 * template (over inputs, workflow and direct deps) or the group's start task output — and reads the awaited
 * workflows. `register` (evaluation, not diagnostics): newly resolved ids get a waiter row and their workflow
 * rows are marked under their locks first, so a finalization either is seen here or leaves an effect.
 */
async function gatherWorkflowTerms(
  q: Queryable,
  ctx: AdvanceContext,
  w: WaitWorkflow,
  def: NormalizedDefinition | undefined,
  tasks: readonly Pick<WaitingTask, 'name' | 'template' | 'deps' | 'wait' | 'wait_progress'>[],
  depRows: readonly DepRow[],
  register: boolean,
): Promise<Map<string, Record<string, WorkflowsTermInput>>> {
  const out = new Map<string, Record<string, WorkflowsTermInput>>();
  if (tasks.length === 0) return out;
  const fresh: { task: string; id: string }[] = [];
  for (const t of tasks) {
    const terms: Record<string, WorkflowsTermInput> = {};
    for (const term of t.wait.terms) {
      if (term.kind !== 'workflows') continue;
      const prior = t.wait_progress?.workflow_terms?.[term.name];
      if (prior) {
        terms[term.name] = {
          ids: prior.ids,
          awaited: [],
          ...(prior.decided ? { decided: prior.decided } : {}),
          ...(prior.error ? { error: prior.error } : {}),
        };
        continue;
      }
      const resolved = resolveIds(term.workflows, t, w, def, depRows);
      terms[term.name] = { ids: resolved.ids, awaited: [], ...(resolved.error ? { error: resolved.error } : {}) };
      for (const id of resolved.ids) fresh.push({ task: t.name, id });
    }
    out.set(t.name, terms);
  }
  if (register && fresh.length > 0) await registerWaiters(q, ctx.s, w.id, fresh);
  const ids = [...new Set([...out.values()].flatMap((terms) => Object.values(terms).flatMap((x) => x.ids)))];
  const awaited = await loadAwaited(q, ctx.s, ids);
  for (const terms of out.values())
    for (const input of Object.values(terms)) input.awaited = input.ids.map((id) => awaited.get(id) ?? { id, state: null, output: null });
  return out;
}

function resolveIds(
  spec: Extract<WaitingTask['wait']['terms'][number], { kind: 'workflows' }>['workflows'],
  t: Pick<WaitingTask, 'template' | 'deps'>,
  w: WaitWorkflow,
  def: NormalizedDefinition | undefined,
  depRows: readonly DepRow[],
): { ids: string[]; error?: string } {
  const mine = depRows.filter((r) => t.deps.includes(r.name));
  let value: unknown;
  if (spec.group !== undefined) {
    const starter = def?.tasks.find((x) => x.start?.group === spec.group);
    const row = starter && mine.find((r) => r.name === starter.name);
    if (!row) return { ids: [], error: `group "${spec.group}": its start task is not a direct dep here` };
    value = (row.output as { workflow_ids?: unknown } | null)?.workflow_ids;
  } else if (typeof spec.ids === 'string') {
    try {
      value = renderTemplates(spec.ids, {
        ...baseContext(def, w),
        deps: tasksContext(mine, expandedDeps(def, t.template), def),
      });
    } catch (error) {
      return { ids: [], error: `ids: ${(error as Error).message}` };
    }
  } else {
    value = spec.ids ?? [];
  }
  if (!Array.isArray(value) || !value.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 200)) {
    return { ids: [], error: 'the awaited workflow ids are not a list of ids (strings)' };
  }
  if ((value as string[]).includes(w.id)) return { ids: [], error: 'a workflow cannot wait on itself' };
  return { ids: [...new Set(value as string[])] };
}

/** The CEL form of a workflows term for generic terms: ids in order, states and completed outputs by id. */
function workflowsCel(input: WorkflowsTermInput): Record<string, unknown> {
  return {
    ids: input.ids,
    states: Object.fromEntries(input.awaited.map((a) => [a.id, a.state ?? 'unknown'])),
    outputs: Object.fromEntries(input.awaited.filter((a) => a.state === 'completed').map((a) => [a.id, a.output])),
  };
}

/** When a direct dep finalized: the dep itself, or the last of its expansions. */
export function finalizedAt(rows: readonly DepRow[], task: Pick<WaitingTask, 'deps'>, dep: string): Date | null {
  let last: number | null = null;
  for (const r of rows) {
    if (!task.deps.includes(r.name) || (r.name !== dep && r.template !== dep) || r.finalized_at === null) continue;
    last = Math.max(last ?? 0, new Date(r.finalized_at).getTime());
  }
  return last === null ? null : new Date(last);
}

/** The workflows a task's workflows term awaited, in the order of their ids, with states and completed outputs. */
export async function workflowResults(
  q: Queryable,
  s: string,
  workflowId: string,
  task: string,
  term: string,
): Promise<{ id: string; state: string | null; output: unknown }[]> {
  const ids = (await waitProgress(q, s, workflowId, task))?.workflow_terms?.[term]?.ids;
  if (!ids) throw new Error(`task "${task}" has no workflows term "${term}" with resolved ids`);
  const awaited = await loadAwaited(q, s, ids);
  return ids.map((id) => ({ id, state: awaited.get(id)?.state ?? null, output: awaited.get(id)?.output ?? null }));
}
