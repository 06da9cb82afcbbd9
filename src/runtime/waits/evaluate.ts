/**
 * Wait evaluation in the runtime. Callers hold the workflow's row lock (SPEC "Concurrency"); these functions
 * load the inputs of the workflow's waiting tasks, decide with wait-eval.ts, and store progress, evidence and
 * the tasks that resolved. Work is proportional to what changed: one workflow, the tasks named or declaring the
 * emitted key, and for signal terms only the rows emitted since the last evaluation.
 */
import type { Queryable } from '../db/types.js';
import { evaluateCondition } from '../engine/conditions.js';
import { dueState } from '../engine/decide.js';
import { depsScope } from '../engine/output.js';
import { deleteFinalized, settle } from '../engine/settle.js';
import { type AdvanceContext, endPending, type Finalized, markCancelled, notifyQueues, type SettleResult } from '../sql/advance.js';
import { recordConditions, undecidedConditions } from '../sql/conditions.js';
import {
  applyWaitUpdates,
  applyWaitUpdatesMany,
  forgetWaiters,
  insertTimers,
  loadDepRows,
  loadTimersMany,
  loadWaitingTasks,
  loadWaitingTasksMany,
  loadWaitWorkflow,
  loadWaitWorkflows,
  markWaitsStarted,
  maxSignalId,
  maxSignalIds,
  notifyTimer,
  type WaitingTask,
  type WaitUpdate,
  type WaitWorkflow,
} from '../sql/waits.js';
import { type Emitted, finalizedAt, type Gathered, gatherInputs } from './gather.js';
import { type AwaitedWorkflow, declaredTimers, evaluateWait, type SignalTermProgress, type TermValue, timerFireAt, type WaitOutcome } from './wait-eval.js';

/** What evaluation keeps between runs (tasks.wait_progress). */
export interface WaitProgressRecord {
  signal_terms: Record<string, SignalTermProgress>;
  /** Each workflows term's ids (resolved when the wait became active) and, once decided, its outcome for good. */
  workflow_terms?: Record<string, { ids: string[]; decided?: 'satisfied' | 'failed'; error?: string }>;
  last: { at: string; result: boolean; error?: string; terms: TermValue[]; truncated?: boolean };
}

/** The snapshot stored when a wait resolves (tasks.wait_evidence). */
export interface WaitEvidence {
  phase: 'resolved';
  started_at: string;
  resolved_at: string;
  expr: string;
  result: true;
  terms: TermValue[];
  inputs: {
    signals: Record<string, string[]>;
    timers: Record<string, { fire_at: string | null; fired: boolean }>;
    deps: Record<string, unknown>;
    /** Awaited workflows per workflows term: their states (and outputs, once completed). */
    workflows: Record<string, AwaitedWorkflow[]>;
  };
  /** Every signal id the evaluation used. */
  signal_ids: string[];
  /** The workflow's last signal id when the wait resolved: task-scoped reads stop here. */
  boundary: string;
}

export interface WaitPass {
  /** Tasks whose wait resolved (workers of their queues are notified on commit). */
  resolved: string[];
  /** Tasks cancelled because a workflows term with on_failure: cancel failed. */
  cancelled: string[];
}

/**
 * The one sequence that applies finalized tasks of a workflow (lock held): settle() advances or cancels their
 * dependents and closes the workflow when nothing is open, then the waits that became ready are activated and
 * evaluated (which may cancel more, through cancelPending). Every path that ends tasks uses it.
 */
export async function advanceWorkflow(q: Queryable, ctx: AdvanceContext, workflowId: string, finalized: Finalized[]): Promise<SettleResult> {
  const result = await settle(q, ctx, workflowId, finalized);
  if (result.waitsReady.length > 0) await activateWaits(q, ctx, workflowId, result.waitsReady);
  return result;
}

/**
 * Cancels pending tasks of one workflow (lock held) as a failed dep would — a failed workflows term, a new
 * task whose dep already failed — and cascades to their dependents. Returns the names cancelled at first.
 */
export async function cancelPending(q: Queryable, ctx: AdvanceContext, workflowId: string, reasons: ReadonlyMap<string, string>): Promise<string[]> {
  if (reasons.size === 0) return [];
  const gone = await markCancelled(q, ctx.s, workflowId, ctx.now, reasons);
  const result = await advanceWorkflow(q, ctx, workflowId, gone);
  await notifyQueues(q, ctx.schema, result.queues);
  return gone.map((g) => g.name);
}

/**
 * Deletes task rows of one workflow (lock held): their dependents see a deleted dep, which fails them
 * unless they ignore deleted deps. What retention's per-task mode does, and an operator's last resort.
 */
export async function deleteTasks(q: Queryable, ctx: AdvanceContext, workflowId: string, names: readonly string[]): Promise<SettleResult> {
  return advanceWorkflow(q, ctx, workflowId, await deleteFinalized(q, ctx.s, workflowId, names));
}

export const DEFAULT_SCAN_LIMIT = 10_000;
export const MAX_SCAN_LIMIT = 100_000;

const empty = (): WaitPass => ({ resolved: [], cancelled: [] });

/**
 * Tasks whose deps were just satisfied and that something holds: their conditions are decided first (a false
 * one skips the task, which cascades), then their waits become active: their start is recorded (unless the
 * completing statement already did), their timers computed from anchors that are all known now, and they are
 * evaluated at once, so signals emitted earlier count.
 */
export async function activateWaits(q: Queryable, ctx: AdvanceContext, workflowId: string, names: readonly string[]): Promise<WaitPass> {
  if (names.length === 0) return empty();
  await decideConditions(q, ctx, workflowId, names);
  await markWaitsStarted(q, ctx.s, workflowId, names, ctx.now);
  const w = await loadWaitWorkflow(q, ctx.s, workflowId);
  if (w?.state !== 'running') return empty();
  const tasks = await loadWaitingTasks(q, ctx.s, workflowId, { names });
  if (tasks.length === 0) return empty();
  const anchorDeps = [...new Set(tasks.flatMap((t) => t.deps))];
  const depRows =
    anchorDeps.length > 0 && tasks.some((t) => declaredTimers(t.wait).some((x) => x.anchor === 'task_finalized'))
      ? await loadDepRows(q, ctx.s, workflowId, anchorDeps)
      : [];
  const timers = tasks.flatMap((t) =>
    declaredTimers(t.wait).flatMap((timer) => {
      const at = timerFireAt(timer, {
        attemptStartedAt: new Date(w.attempt_started_at),
        waitStartedAt: new Date(t.wait_started_at),
        depFinalizedAt: (dep) => finalizedAt(depRows, t, dep),
      });
      return at ? [{ task: t.name, name: timer.name, fire_at: at }] : [];
    }),
  );
  await insertTimers(q, ctx.s, workflowId, w.attempt, timers);
  if (timers.length > 0) {
    await notifyTimer(q, ctx.schema, new Date(Math.min(...timers.map((t) => t.fire_at.getTime()))));
  }
  return evaluateLoaded(q, ctx, w, tasks);
}

/**
 * Decides the conditions of tasks whose deps are all done, once: true lets the task go on to its wait or its
 * schedule, false skips it, an evaluation error discards it (recorded); skips and discards settle like any end.
 */
async function decideConditions(q: Queryable, ctx: AdvanceContext, workflowId: string, names: readonly string[]): Promise<void> {
  const tasks = await undecidedConditions(q, ctx.s, workflowId, names);
  if (tasks.length === 0) return;
  const w = await loadWaitWorkflow(q, ctx.s, workflowId);
  if (w?.state !== 'running') return;
  const def = await ctx.definitions.find(q, w.name, w.definition_hash);
  const depRows = await loadDepRows(q, ctx.s, workflowId, [...new Set(tasks.flatMap((t) => t.deps))]);
  const decisions: { name: string; met: boolean; state: string; queue: string }[] = [];
  const errors = new Map<string, string>();
  for (const t of tasks) {
    const outcome = evaluateCondition(t.condition, depsScope(def, w, t, depRows));
    if ('error' in outcome) errors.set(t.name, outcome.error);
    else
      decisions.push({
        name: t.name,
        met: outcome.run,
        queue: t.queue,
        state: !outcome.run ? 'skipped' : t.has_wait ? 'pending' : dueState(new Date(t.scheduled_at), ctx.now),
      });
  }
  const skipped = await recordConditions(q, ctx.s, workflowId, ctx.now, decisions);
  const discarded = await endPending(q, ctx.s, workflowId, ctx.now, 'discarded', 'condition', errors);
  const result = await advanceWorkflow(q, ctx, workflowId, [...skipped, ...discarded]);
  await notifyQueues(q, ctx.schema, [...result.queues, ...decisions.filter((d) => d.state === 'available').map((d) => d.queue)]);
}

/**
 * Re-evaluates a workflow's active waits: those named (a timer fired), or those that declare `key` (a signal).
 * `known` spares reads the caller already made: the workflow row, and the workflow's last signal id.
 */
export async function evaluateWaits(
  q: Queryable,
  ctx: AdvanceContext,
  workflowId: string,
  filter: { names?: readonly string[]; key?: string },
  known: { workflow?: WaitWorkflow; emitted?: Emitted } = {},
): Promise<WaitPass> {
  const w = known.workflow ?? (await loadWaitWorkflow(q, ctx.s, workflowId));
  if (w?.state !== 'running') return empty();
  const tasks = await loadWaitingTasks(q, ctx.s, workflowId, filter);
  return tasks.length === 0 ? empty() : evaluateLoaded(q, ctx, w, tasks, known.emitted);
}

async function evaluateLoaded(q: Queryable, ctx: AdvanceContext, w: WaitWorkflow, tasks: WaitingTask[], emitted?: Emitted): Promise<WaitPass> {
  const gathered = await gatherInputs(q, ctx, w, tasks, { fromScratch: false, scanLimit: DEFAULT_SCAN_LIMIT, emitted, register: true });
  const outcomes = tasks.map((t) => evaluateWait(t.wait, gathered.get(t.name)!.inputs));
  // the emitted row is the workflow's newest: ids are assigned under the lock its emitter holds
  const boundary = emitted?.row.id ?? (outcomes.some((o) => o.result) ? await maxSignalId(q, ctx.s, w.id) : '0');
  const judged = judge(ctx, tasks, gathered, outcomes, boundary);
  await applyWaitUpdates(q, ctx, w.id, judged.updates);
  return settleJudged(q, ctx, w.id, tasks, judged);
}

interface Judged {
  updates: WaitUpdate[];
  resolved: string[];
  /** Tasks a failed workflows term (on_failure: cancel) fails, with why. */
  failures: Map<string, string>;
}

/** What each evaluation means for its task: the progress to store, and whether it resolved or failed. Pure. */
function judge(
  ctx: AdvanceContext,
  tasks: readonly WaitingTask[],
  gathered: ReadonlyMap<string, Gathered>,
  outcomes: readonly WaitOutcome[],
  boundary: string,
): Judged {
  const judged: Judged = { updates: [], resolved: [], failures: new Map() };
  const at = ctx.now.toISOString();
  tasks.forEach((t, i) => {
    const g = gathered.get(t.name)!;
    const outcome = outcomes[i];
    const workflowTerms = Object.fromEntries(
      Object.entries(g.inputs.workflowTerms ?? {}).map(([name, input]) => {
        const decided = outcomeOf(outcome, name);
        return [name, { ids: input.ids, ...(decided ? { decided } : {}), ...(input.error ? { error: input.error } : {}) }];
      }),
    );
    const progress: WaitProgressRecord = {
      signal_terms: g.inputs.signalTerms,
      ...(Object.keys(workflowTerms).length > 0 ? { workflow_terms: workflowTerms } : {}),
      last: {
        at,
        result: outcome.result,
        ...(outcome.error ? { error: outcome.error } : {}),
        terms: outcome.terms,
        ...(g.truncated ? { truncated: true } : {}),
      },
    };
    if (!outcome.result) {
      judged.updates.push({ name: t.name, progress });
      // a failed workflows term with on_failure: cancel fails the task, as a failed dep would
      const failedTerm = outcome.terms.find((term) => term.kind === 'workflows' && term.outcome === 'failed' && term.on_failure === 'cancel');
      if (failedTerm)
        judged.failures.set(
          t.name,
          `waited-on workflows failed: term "${failedTerm.name}" (${failedTerm.completed} of ${failedTerm.required} needed completed)`,
        );
      return;
    }
    judged.updates.push({ name: t.name, progress, state: dueState(new Date(t.scheduled_at), ctx.now), evidence: evidenceOf(t, g, outcome, ctx.now, boundary) });
    judged.resolved.push(t.name);
  });
  return judged;
}

/** After the updates are stored: failed terms cancel their tasks, and decided workflows terms stop listening. */
async function settleJudged(q: Queryable, ctx: AdvanceContext, workflowId: string, tasks: readonly WaitingTask[], judged: Judged): Promise<WaitPass> {
  const pass: WaitPass = { resolved: judged.resolved, cancelled: await cancelPending(q, ctx, workflowId, judged.failures) };
  const done = [...pass.resolved, ...pass.cancelled].filter((name) => tasks.find((t) => t.name === name)?.wait.terms.some((term) => term.kind === 'workflows'));
  if (done.length > 0) await forgetWaiters(q, ctx.s, workflowId, done);
  return pass;
}

/**
 * evaluateWaits for many workflows at once (their locks held, a timer storm's batch): what every one of them
 * reads in common (the workflows, their waiting tasks, timers and last signal ids) is read once for all, and
 * the evaluations are stored in one statement; only what a wait reads beyond that (signals, deps, awaited
 * workflows) is read per workflow. Returns how many workflows had a wait evaluated.
 */
export async function evaluateWaitsBatch(q: Queryable, ctx: AdvanceContext, targets: ReadonlyMap<string, readonly string[]>): Promise<number> {
  const ids = [...targets.keys()];
  if (ids.length === 0) return 0;
  const [workflows, tasks, timers, boundaries] = [
    await loadWaitWorkflows(q, ctx.s, ids),
    await loadWaitingTasksMany(
      q,
      ctx.s,
      [...targets].flatMap(([workflow_id, names]) => names.map((name) => ({ workflow_id, name }))),
    ),
    await loadTimersMany(q, ctx.s, ids),
    await maxSignalIds(q, ctx.s, ids),
  ];
  const judgedByWorkflow: { w: WaitWorkflow; mine: WaitingTask[]; judged: Judged }[] = [];
  for (const w of workflows) {
    const mine = tasks.filter((t) => t.workflow_id === w.id);
    if (w.state !== 'running' || mine.length === 0) continue;
    const gathered = await gatherInputs(q, ctx, w, mine, {
      fromScratch: false,
      scanLimit: DEFAULT_SCAN_LIMIT,
      register: true,
      timers: timers.filter((t) => t.workflow_id === w.id),
    });
    const outcomes = mine.map((t) => evaluateWait(t.wait, gathered.get(t.name)!.inputs));
    judgedByWorkflow.push({ w, mine, judged: judge(ctx, mine, gathered, outcomes, boundaries.get(w.id) ?? '0') });
  }
  await applyWaitUpdatesMany(
    q,
    ctx,
    judgedByWorkflow.flatMap(({ w, judged }) => judged.updates.map((u) => ({ ...u, workflow_id: w.id }))),
  );
  for (const { w, mine, judged } of judgedByWorkflow)
    if (judged.failures.size > 0 || mine.some((t) => t.wait.terms.some((term) => term.kind === 'workflows'))) await settleJudged(q, ctx, w.id, mine, judged);
  return judgedByWorkflow.length;
}

/** A workflows term's outcome once decided (satisfied or failed); undefined while it is not. */
function outcomeOf(outcome: WaitOutcome, term: string): 'satisfied' | 'failed' | undefined {
  const t = outcome.terms.find((x) => x.name === term);
  return t?.outcome === 'satisfied' || t?.outcome === 'failed' ? t.outcome : undefined;
}

function evidenceOf(t: WaitingTask, g: Gathered, outcome: WaitOutcome, now: Date, boundary: string): WaitEvidence {
  const signals = Object.fromEntries(Object.entries(g.genericSignals).map(([k, rows]) => [k, rows.map((r) => r.id)]));
  const ids = new Set([...outcome.terms.flatMap((term) => term.signal_ids ?? []), ...Object.values(signals).flat()]);
  return {
    phase: 'resolved',
    started_at: new Date(t.wait_started_at).toISOString(),
    resolved_at: now.toISOString(),
    expr: t.wait.expr,
    result: true,
    terms: outcome.terms,
    inputs: {
      signals,
      timers: Object.fromEntries(
        Object.entries(g.inputs.timers).map(([name, at]) => [
          name,
          { fire_at: at === null ? null : at.toISOString(), fired: at !== null && at.getTime() <= now.getTime() },
        ]),
      ),
      deps: g.depOutputs,
      workflows: Object.fromEntries(Object.entries(g.inputs.workflowTerms ?? {}).map(([name, input]) => [name, input.awaited])),
    },
    signal_ids: [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)),
    boundary,
  };
}
