/**
 * Moving a workflow to another version of its definition, in the caller's transaction under the workflow's
 * lock: decided by move.ts, applied here. Started tasks keep their run (renamed by `renamed_from`, relinked to
 * the target's edges); tasks not started take the target's definition, and their waits start over with the
 * signals already received (a wait's start time is kept, so its timers keep their anchor); new tasks are
 * inserted with their deps counted from what has ended; removed tasks not started are deleted, removed tasks
 * that ended stay as history (and, with --cancel-removed, removed tasks not final are cancelled into it).
 */

import { canonicalJson } from '../../compiler/canonical-json.js';
import { CompileError, type CompileLimits } from '../../compiler/compile-error.js';
import type { Plan, PlanTask } from '../../compiler/plan.js';
import type { Acting } from '../core/actor.js';
import { compiler } from '../core/lazy-compiler.js';
import { sealPlan } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { deleteTaskRows, type Finalized, lockWorkflows } from '../sql/advance.js';
import { writeAudit } from '../sql/audit.js';
import type { StoredDefinition } from '../sql/definitions.js';
import { insertTaskRows } from '../sql/insert.js';
import {
  forgetWaitState,
  type MoveTaskRow,
  moveTaskRows,
  type RedefinedRow,
  redefineTasks,
  relinkTasks,
  renameTasks,
  retireRemovedTasks,
  setWorkflowVersion,
} from '../sql/upgrade.js';
import { notifyTimer } from '../sql/waits.js';
import { workflowVersionRef } from '../sql/workflows.js';
import { activateWaits, advanceWorkflow } from './advance.js';
import type { AdvanceContext } from './context.js';
import { depsOutcome, dueState, type FinalState, isFinal } from './decide.js';
import { isHeld, taskRows } from './insert.js';
import { evidenceLost, type MovePlan, planMove } from './move.js';
import { closeTasks } from './settle.js';

export interface UpgradeOptions {
  /** Decide and report, write nothing (and take no row lock). */
  dryRun?: boolean;
  /** A finalized workflow about to be retried: these tasks (current names) run again, so they take the target's definition. */
  rerun?: ReadonlySet<string>;
  limits?: Partial<CompileLimits>;
  /** Found by a scan of running workflows (not named by the caller): one that has finished since is `finished`, not refused. */
  scanned?: boolean;
  /** Removed tasks not final (but not running) are cancelled and kept as history rather than refusing the move. */
  cancelRemoved?: boolean;
  /** Move even when active waits would lose evidence (signals that stop counting, timers re-anchored). */
  dropEvidence?: boolean;
  /** Who moves it: the move writes its audit line (a bulk operation's run writes its own). */
  who?: Acting;
}

/**
 * What happened to one workflow: moved (or, dry, would move), skipped with the reason, already there, or (found
 * running by a scan) finished before its turn came.
 */
export interface UpgradeOutcome {
  id: string;
  from: string | null;
  to: string;
  status: 'moved' | 'would_move' | 'skipped' | 'current' | 'finished';
  reason?: string;
  /** The task names that changed, when it moved: renamed (old -> new), inserted, deleted. */
  renamed?: Record<string, string>;
  inserted?: string[];
  deleted?: string[];
  /** Removed tasks kept as history (ended before), and those cancelled into it (--cancel-removed). */
  history?: string[];
  cancelled?: string[];
  /** Evidence the move dropped from active waits (--drop-evidence), in words. */
  dropped?: string[];
}

/**
 * Moves one workflow to `target`: a running one (a finalized one only with `rerun`, for a retry that follows).
 * Returns the outcome; on `moved`, the tasks a retry must also run again (`inserted`) are named.
 */
export async function upgradeWorkflow(
  q: Queryable,
  ctx: AdvanceContext,
  id: string,
  target: StoredDefinition,
  options: UpgradeOptions = {},
): Promise<UpgradeOutcome> {
  const { s } = ctx;
  const skip = (from: string | null, reason: string): UpgradeOutcome => ({ id, from, to: target.hash, status: 'skipped', reason });
  if (!options.dryRun && !(await lockWorkflows(q, s, [id])).has(id)) return skip(null, 'no such workflow');
  const w = await workflowVersionRef(q, s, id);
  if (!w) return skip(null, 'no such workflow');
  if (w.name !== target.name) return skip(w.definition_hash, `it is a ${w.name} workflow, not ${target.name}`);
  if (w.definition_hash === target.hash) return { id, from: w.definition_hash, to: target.hash, status: 'current' };
  const finalized = w.state !== 'running';
  if (finalized && !options.rerun && options.scanned)
    return { id, from: w.definition_hash, to: target.hash, status: 'finished', reason: `it ended ${w.state} before its turn` };
  if (finalized && !options.rerun)
    return skip(w.definition_hash, `it is ${w.state}: only running workflows move (retry --on-current moves a finished one and runs it again)`);
  if (!finalized && w.ending) return skip(w.definition_hash, 'it is being cancelled (or timed out): its open tasks are ending');
  const { compile } = await compiler();
  let plan: Plan;
  try {
    plan = sealPlan(compile(target.normalized, w.inputs, { id, now: w.created_at, limits: options.limits }), target.normalized, ctx.dataKeys);
  } catch (error) {
    if (error instanceof CompileError)
      return skip(w.definition_hash, `its inputs do not fit version ${target.hash.slice(0, 12)}: ${error.diagnostics.map((d) => d.message).join('; ')}`);
    throw error;
  }
  const rows = await moveTaskRows(q, s, id, !options.dryRun);
  const from = await ctx.definitions.find(q, w.name, w.definition_hash);
  const decision = planMove(rows, plan.tasks, target.normalized, from, options.rerun, { cancelRemoved: options.cancelRemoved });
  if (!decision.ok) return skip(w.definition_hash, decision.reason);
  const move = decision.plan;
  const lost = evidenceLost(rows, move, plan.tasks);
  if (lost.length > 0 && !options.dropEvidence)
    return skip(w.definition_hash, `${lost.join('; ')} (renamed_from: OLD_KEY on the signal term keeps them; --drop-evidence moves it anyway)`);
  const outcome: UpgradeOutcome = {
    id,
    from: w.definition_hash,
    to: target.hash,
    status: options.dryRun ? 'would_move' : 'moved',
    renamed: Object.fromEntries(move.renames.map((r) => [r.from, r.to])),
    inserted: move.inserted,
    deleted: move.deleted,
    history: move.history,
    cancelled: move.cancelled,
    ...(lost.length > 0 ? { dropped: lost } : {}),
  };
  if (options.dryRun) return outcome;
  await applyMove(q, ctx, { id, from: w.definition_hash, finalized }, rows, plan.tasks, move, target, plan.workflow);
  if (options.who)
    await writeAudit(q, s, ctx.now, [
      { action: 'workflow.upgrade', target: id, workflow_id: id, ...options.who, detail: { from: outcome.from, to: outcome.to } },
    ]);
  return outcome;
}

async function applyMove(
  q: Queryable,
  ctx: AdvanceContext,
  w: { id: string; from: string; finalized: boolean },
  rows: readonly MoveTaskRow[],
  tasks: readonly PlanTask[],
  move: MovePlan,
  target: StoredDefinition,
  workflow: { inputs: unknown; output: unknown; timeout_ms?: number; created_at: string },
): Promise<void> {
  const { s, now } = ctx;
  const renamed = new Map(move.renames.map((r) => [r.from, r.to]));
  const rowOf = new Map(rows.map((r) => [renamed.get(r.name) ?? r.name, r]));
  await deleteTaskRows(q, s, w.id, move.deleted);
  await forgetWaitState(q, s, w.id, [...move.deleted, ...move.cancelled]);
  await retireRemovedTasks(q, s, w.id, target.hash, move.history, move.cancelled, now);
  await renameTasks(q, s, w.id, move.renames);
  const { all, ended, activate, keepHold, allDone } = movedTaskRows(ctx.now, w.finalized, rowOf, tasks, move, workflow.created_at);
  const byName = new Map(all.map((r) => [r.name, r]));
  await relinkTasks(
    q,
    s,
    w.id,
    move.kept.map((n) => ({ name: n, deps: byName.get(n)!.deps, dependents: byName.get(n)!.dependents, dependents_wait: byName.get(n)!.dependents_wait })),
  );
  const redefined: RedefinedRow[] = move.redefined.map((n) => {
    const r = byName.get(n)!;
    const old = rowOf.get(n)!;
    const anchor = r.wait !== null && allDone.has(n) && old.wait_started_at ? new Date(old.wait_started_at).toISOString() : null;
    return { ...r, keep_hold: keepHold.has(n), wait_started_at: keepHold.has(n) ? old.wait_started_at && new Date(old.wait_started_at).toISOString() : anchor };
  });
  await redefineTasks(q, s, w.id, redefined);
  await forgetWaitState(
    q,
    s,
    w.id,
    move.redefined.filter((n) => !keepHold.has(n)),
  );
  await insertTaskRows(
    q,
    ctx,
    w.id,
    move.inserted.map((n) => byName.get(n)!),
    now,
  );
  const deadline = await setWorkflowVersion(q, s, {
    id: w.id,
    from: w.from,
    to: target.hash,
    output: workflow.output,
    inputs: workflow.inputs,
    timeoutMs: workflow.timeout_ms ?? null,
    added: move.inserted.length,
    removed: move.deleted.length,
    open: !w.finalized,
    at: now,
  });
  if (w.finalized) return;
  if (deadline) await notifyTimer(q, ctx.schema, new Date(deadline));
  await advanceWorkflow(q, ctx, w.id, ended);
  await activateWaits(q, ctx, w.id, activate);
  // a move that left nothing open (every task it removed was the last to do) ends the workflow
  await closeTasks(q, ctx, w.id, move.cancelled.length, 0);
}

/**
 * The new version's task rows as the move leaves them: kept rows keep their state; the others' deps counted
 * from the states their deps will be in; a task whose dep failed or was skipped is marked to follow it; a held
 * task whose wait and condition did not change keeps its hold; one that must be held anew is to activate.
 */
function movedTaskRows(now: Date, finalized: boolean, rowOf: ReadonlyMap<string, MoveTaskRow>, tasks: readonly PlanTask[], move: MovePlan, createdAt: string) {
  const kept = new Set(move.kept);
  // the state each dep will be in: kept rows keep theirs, the rest are not final yet
  const depState = (name: string) => (kept.has(name) ? rowOf.get(name)!.state : 'pending');
  const endedDeps = new Map<string, string[]>();
  const allDone = new Set<string>();
  const activate: string[] = [];
  const keepHold = new Set<string>();
  const all = taskRows(tasks, new Date(createdAt), now, (t) => {
    if (kept.has(t.name)) return {};
    const final = t.deps.flatMap((d) => (isFinal(depState(d)) ? [{ name: d, state: depState(d) as FinalState }] : []));
    const left = t.deps.length - final.length;
    if (finalized) return { deps_left: left, state: rowOf.get(t.name)?.state ?? 'pending' };
    if (left === 0) allDone.add(t.name);
    const row = rowOf.get(t.name);
    // a wait that resolved (or a condition decided) and did not change is not asked again, while its deps still let it go on
    if (left === 0 && row && row.state !== 'pending' && isHeld(t) && sameHold(row, t) && depsOutcome(t, final).outcome === 'satisfied') {
      keepHold.add(t.name);
      return { deps_left: 0, state: dueState(new Date(t.scheduled_at ?? createdAt), now) };
    }
    if (final.length === 0) {
      if (left === 0 && isHeld(t)) activate.push(t.name);
      return { deps_left: left };
    }
    // its final deps reach it as if they had just ended: the advance wave counts them down, or cancels or skips it
    for (const d of final) endedDeps.set(d.name, [...(endedDeps.get(d.name) ?? []), t.name]);
    return { deps_left: t.deps.length, state: 'pending' };
  });
  const ended: Finalized[] = [...endedDeps].map(([name, dependents]) => ({
    name,
    state: depState(name) as FinalState,
    dependents,
    alreadyClosed: true,
    dependentsCounted: false,
  }));
  return { all, ended, activate, keepHold, allDone };
}

/** Whether a task not started holds for the same reasons in both versions: its wait and condition unchanged. */
function sameHold(row: MoveTaskRow, t: PlanTask): boolean {
  return canonicalJson(row.wait) === canonicalJson(t.wait) && (row.condition ?? null) === t.when;
}
