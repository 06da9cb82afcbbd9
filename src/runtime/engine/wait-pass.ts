/**
 * One pass over waits of workflows whose row locks the caller holds (SPEC "Concurrency"): what the waiting
 * tasks read is gathered (waits/gather.ts), each wait decided (waits/decide.ts), and the progress, evidence and
 * resolutions stored. Work is proportional to what changed: the tasks named or declaring the emitted key, and
 * for signal terms only the rows emitted since the last pass. What the verdict means for other tasks (a failed
 * workflows term cancels its task, as a failed dep would) is advance.ts's to act on.
 */
import type { Queryable } from '../db/types.js';
import {
  applyWaitUpdatesMany,
  type DepRow,
  forgetWaiters,
  loadTimersMany,
  loadWaitingTasksMany,
  loadWaitWorkflows,
  maxSignalIds,
  type TimerRow,
  type WaitingTask,
  type WaitUpdate,
  type WaitWorkflow,
} from '../sql/waits.js';
import { declaredTimers, evaluateWait, timerFireAt, type WaitOutcome } from '../waits/decide.js';
import { type Emitted, finalizedAt, type Gathered, gatherInputs } from '../waits/gather.js';
import { DEFAULT_SCAN_LIMIT, type WaitEvidence, type WaitProgressRecord } from '../waits/records.js';
import type { AdvanceContext } from './context.js';
import { dueState } from './decide.js';

/** What a pass decided, for the engine to act on. */
export interface WaitVerdict {
  /** Tasks whose wait resolved (stored by the pass). */
  resolved: string[];
  /** Tasks a failed workflows term (on_failure: cancel) fails, with why. */
  failures: Map<string, string>;
}

/** The timers of waits becoming active, computed from anchors that are all known now. Pure. */
export function activationTimers(w: WaitWorkflow, tasks: readonly WaitingTask[], depRows: readonly DepRow[]): { task: string; name: string; fire_at: Date }[] {
  return tasks.flatMap((t) =>
    declaredTimers(t.wait).flatMap((timer) => {
      const at = timerFireAt(timer, {
        attemptStartedAt: new Date(w.attempt_started_at),
        waitStartedAt: new Date(t.wait_started_at),
        depFinalizedAt: (dep) => finalizedAt(depRows, t, dep),
      });
      return at ? [{ task: t.name, name: timer.name, fire_at: at }] : [];
    }),
  );
}

/** Whether any of the tasks' waits anchors a timer on a dep's end (its deps' rows must then be read). */
export function anchorsOnDeps(tasks: readonly WaitingTask[]): boolean {
  return tasks.some((t) => declaredTimers(t.wait).some((x) => x.anchor === 'task_finalized'));
}

/** One workflow's waits to judge: the workflow, its loaded waiting tasks, the signal just emitted, its timers when read already. */
export interface WaitsToJudge {
  w: WaitWorkflow;
  tasks: WaitingTask[];
  emitted?: Emitted;
  timers?: readonly TimerRow[];
}

/**
 * Decides the loaded waits of workflows whose row locks the caller holds, and stores what they decided: each
 * workflow's inputs gathered and its waits evaluated, then every evaluation stored in one statement. One
 * workflow (a signal, an activation) is a batch of one. Returns the verdict of each workflow judged.
 */
export async function judgeWaits(q: Queryable, ctx: AdvanceContext, batch: readonly WaitsToJudge[]): Promise<Map<string, WaitVerdict>> {
  const evaluated: (WaitsToJudge & { gathered: Map<string, Gathered>; outcomes: WaitOutcome[] })[] = [];
  for (const b of batch) {
    if (b.w.state !== 'running' || b.tasks.length === 0) continue;
    const gathered = await gatherInputs(q, ctx, b.w, b.tasks, {
      fromScratch: false,
      scanLimit: DEFAULT_SCAN_LIMIT,
      emitted: b.emitted,
      register: true,
      timers: b.timers,
    });
    evaluated.push({ ...b, gathered, outcomes: b.tasks.map((t) => evaluateWait(t.wait, gathered.get(t.name)!.inputs)) });
  }
  // the signals a resolution saw: up to the emitted row (the workflow's newest: ids are assigned under the lock
  // its emitter holds), else up to the newest, read for the workflows where something resolved
  const unread = evaluated.filter((e) => !e.emitted && e.outcomes.some((o) => o.result)).map((e) => e.w.id);
  const newest = unread.length > 0 ? await maxSignalIds(q, ctx.s, unread) : new Map<string, string>();
  const judged = evaluated.map((e) => ({ ...e, judged: judge(ctx, e.tasks, e.gathered, e.outcomes, e.emitted?.row.id ?? newest.get(e.w.id) ?? '0') }));
  await applyWaitUpdatesMany(
    q,
    ctx,
    judged.flatMap((e) => e.judged.updates.map((u) => ({ ...u, workflow_id: e.w.id }))),
  );
  const verdicts = new Map<string, WaitVerdict>();
  for (const e of judged) {
    await forgetDecided(q, ctx, e.w.id, e.tasks, e.judged);
    verdicts.set(e.w.id, { resolved: e.judged.resolved, failures: e.judged.failures });
  }
  return verdicts;
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

/** Workflows terms that are decided (their task resolved or failed) stop listening to the awaited workflows. */
async function forgetDecided(q: Queryable, ctx: AdvanceContext, workflowId: string, tasks: readonly WaitingTask[], judged: Judged): Promise<void> {
  const done = [...judged.resolved, ...judged.failures.keys()].filter((name) =>
    tasks.find((t) => t.name === name)?.wait.terms.some((term) => term.kind === 'workflows'),
  );
  if (done.length > 0) await forgetWaiters(q, ctx.s, workflowId, done);
}

/**
 * The waits of many workflows to judge at once (their locks held, a timer storm's batch): what every one of them
 * reads in common (the workflows, their waiting tasks and timers) is read once for all; only what a wait reads
 * beyond that (signals, deps, awaited workflows) is read per workflow, by judgeWaits.
 */
export async function waitsToJudge(q: Queryable, ctx: AdvanceContext, targets: ReadonlyMap<string, readonly string[]>): Promise<WaitsToJudge[]> {
  const ids = [...targets.keys()];
  if (ids.length === 0) return [];
  const workflows = await loadWaitWorkflows(q, ctx.s, ids);
  const tasks = await loadWaitingTasksMany(
    q,
    ctx.s,
    [...targets].flatMap(([workflow_id, names]) => names.map((name) => ({ workflow_id, name }))),
  );
  const timers = await loadTimersMany(q, ctx.s, ids);
  return workflows.map((w) => ({ w, tasks: tasks.filter((t) => t.workflow_id === w.id), timers: timers.filter((t) => t.workflow_id === w.id) }));
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
