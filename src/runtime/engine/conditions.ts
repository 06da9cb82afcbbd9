/**
 * A task's condition (`when`), decided once its deps are final. Its context is scopes.ts's depsScope, what the
 * compiler's `when` context declares (cel/environments.ts).
 */
import { evaluateRaw } from '../../compiler/cel/evaluate.js';
import { depsScope } from '../core/scopes.js';
import type { Queryable } from '../db/types.js';
import { endPending, type Finalized } from '../sql/advance.js';
import { recordConditions, undecidedConditions } from '../sql/conditions.js';
import { loadDepRows, loadWaitWorkflow } from '../sql/waits.js';
import type { AdvanceContext } from './context.js';
import { conditionOutcome, dueState } from './decide.js';

/** Evaluates a condition: run or skip, or the error that discards the task (a CEL error, a value not a bool). Pure. */
export function evaluateCondition(expr: string, context: Record<string, unknown>): { run: boolean } | { error: string } {
  try {
    return conditionOutcome(evaluateRaw(expr, context));
  } catch (error) {
    const summary = (error as { summary?: string }).summary ?? String((error as Error).message ?? error).split('\n')[0];
    return { error: `when: ${summary}` };
  }
}

/**
 * Decides, once, the conditions of the named tasks whose deps are all done (the workflow's lock held): true lets
 * the task go on to its wait or its schedule, false skips it, an evaluation error discards it (recorded).
 * Returns the tasks that ended (to settle like any end), or undefined when nothing was decided.
 */
export async function decideConditions(q: Queryable, ctx: AdvanceContext, workflowId: string, names: readonly string[]): Promise<Finalized[] | undefined> {
  const tasks = await undecidedConditions(q, ctx.s, workflowId, names);
  if (tasks.length === 0) return undefined;
  const w = await loadWaitWorkflow(q, ctx.s, workflowId);
  if (w?.state !== 'running') return undefined;
  const def = await ctx.definitions.find(q, w.name, w.definition_hash);
  const depRows = await loadDepRows(q, ctx.s, workflowId, [...new Set(tasks.flatMap((t) => t.deps))]);
  const decisions: { name: string; met: boolean; state: string }[] = [];
  const errors = new Map<string, string>();
  for (const t of tasks) {
    const outcome = evaluateCondition(t.condition, depsScope(def, w, t, depRows));
    if ('error' in outcome) errors.set(t.name, outcome.error);
    else
      decisions.push({
        name: t.name,
        met: outcome.run,
        state: !outcome.run ? 'skipped' : t.has_wait ? 'pending' : dueState(new Date(t.scheduled_at), ctx.now),
      });
  }
  const skipped = await recordConditions(q, ctx.s, workflowId, ctx.now, decisions);
  const discarded = await endPending(q, ctx.s, workflowId, ctx.now, 'discarded', 'condition', errors);
  return [...skipped, ...discarded];
}
