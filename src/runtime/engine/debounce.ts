/**
 * Debounced starts (a workflow's `debounce: { key, quiet }`): a start waits `quiet` before its tasks may run;
 * a start with the same key within that time replaces the waiting run's inputs and plan (same id) and moves the
 * wait on, so a burst of starts makes one run, with the last inputs. A start with a caller-chosen id is not
 * debounced: the id is its identity.
 */

import { baseContext } from '../../compiler/cel/context.js';
import { CompileError } from '../../compiler/compile-error.js';
import { debounceKeyOf } from '../../compiler/flow.js';
import type { Plan } from '../../compiler/plan.js';
import { compiler } from '../core/lazy-compiler.js';
import { sealPlan } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { lockDebounce, markDebounced, pendingDebounced, resetDebounced } from '../sql/debounce.js';
import type { StoredDefinition } from '../sql/definitions.js';
import { type InsertExtras, insertTaskRows } from '../sql/insert.js';
import { activateWaits } from './advance.js';
import type { AdvanceContext, StartIn } from './context.js';
import { insertPlan, isHeld, placeFlowTasks, taskRows } from './insert.js';

export async function debouncedStart(
  tx: Queryable,
  ctx: AdvanceContext,
  def: StoredDefinition,
  inputs: unknown,
  o: StartIn,
  extras: InsertExtras,
): Promise<{ id: string; existing: boolean }> {
  const debounce = def.normalized.debounce!;
  const { compile } = await compiler();
  const options = { now: ctx.now, limits: o.limits, hash: def.hash };
  const fresh = sealPlan(compile(def.normalized, inputs, options), def.normalized, ctx.dataKeys);
  const w = fresh.workflow;
  let key: string;
  try {
    key = debounceKeyOf(debounce.key, baseContext(def.normalized, { id: w.id, name: w.name, created_at: ctx.now, inputs: w.inputs }).inputs);
  } catch (error) {
    const at = { file: '<inputs>', line: 1, column: 1, end_line: 1, end_column: 1, path: '/debounce/key' };
    throw new CompileError([{ rule: 'flow-control', severity: 'error', message: (error as Error).message, ...at }]);
  }
  const until = new Date(ctx.now.getTime() + debounce.quiet_ms);
  await lockDebounce(tx, def.name, key);
  const pending = await pendingDebounced(tx, ctx.s, def.name, key, ctx.now);
  if (!pending) {
    await insertPlan(tx, ctx, holdUntil(fresh, until), extras);
    await markDebounced(tx, ctx.s, w.id, key, until);
    return { id: w.id, existing: false };
  }
  const plan = holdUntil(sealPlan(compile(def.normalized, inputs, { ...options, id: pending.id }), def.normalized, ctx.dataKeys), until);
  await resetDebounced(tx, ctx.s, pending.id, { inputs: plan.workflow.inputs, tasks: plan.tasks.length, until });
  const rows = taskRows(plan.tasks, new Date(pending.created_at), ctx.now);
  if (rows.length > 0) await insertTaskRows(tx, ctx, pending.id, rows, ctx.now);
  await placeFlowTasks(tx, ctx.s, rows);
  const roots = plan.tasks.filter((t) => isHeld(t) && t.deps.length === 0).map((t) => t.name);
  if (roots.length > 0) await activateWaits(tx, ctx, pending.id, roots);
  return { id: pending.id, existing: true };
}

/** The plan with no task due before `until` (the quiet period's end). */
function holdUntil(plan: Plan, until: Date): Plan {
  for (const t of plan.tasks) if (t.scheduled_at === null || new Date(t.scheduled_at) < until) t.scheduled_at = until.toISOString();
  return plan;
}
