import { compiler } from '../core/lazy-compiler.js';
import { sealPlan } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { WorkflowConflictError } from '../errors.js';
import type { StoredDefinition } from '../sql/definitions.js';
import { lockWorkflowId, startedAs } from '../sql/workflows.js';
import { continued } from '../telemetry/tracing.js';
import type { AdvanceContext, StartIn } from './context.js';
import { insertPlan } from './insert.js';

/**
 * Starts a workflow of a definition version in the caller's transaction: compiled with its inputs, then
 * inserted, under the business key's lock when it has one. Says whether the id was there already.
 */
export async function startIn(
  tx: Queryable,
  ctx: AdvanceContext,
  def: StoredDefinition,
  inputs: unknown,
  o: StartIn = {},
): Promise<{ id: string; existing: boolean }> {
  if (def.normalized.debounce && o.id === undefined) {
    const { debouncedStart } = await import('./debounce.js');
    return debouncedStart(tx, ctx, def, inputs, o, { ...o.extras, traceContext: null });
  }
  const { compile } = await compiler();
  const plan = sealPlan(compile(def.normalized, inputs, { id: o.id, now: ctx.now, limits: o.limits, hash: def.hash }), def.normalized, ctx.dataKeys);
  if (o.id !== undefined) {
    await lockWorkflowId(tx, ctx.schema, o.id);
    // the inputs as started (defaults applied) decide, as the stored ones were
    const existing = await startedAs(tx, ctx.s, o.id, plan.workflow.inputs);
    if (existing) {
      if (existing.name !== def.name || !existing.same_inputs) throw new WorkflowConflictError(o.id, existing, def.name);
      return { id: o.id, existing: true };
    }
  }
  const tracing = ctx.tracing;
  const span =
    tracing?.begin(
      `braid.workflow ${def.name}`,
      'producer',
      { 'braid.workflow.id': plan.workflow.id, 'braid.workflow.name': def.name, 'braid.workflow.version': def.hash.slice(0, 12), 'braid.workflow.attempt': 1 },
      tracing.callerContext(o.caller),
    ) ?? null;
  try {
    await insertPlan(tx, ctx, plan, { ...o.extras, traceContext: continued(span, o.caller) });
  } catch (error) {
    tracing?.fail(span, error);
    throw error;
  }
  tracing?.end(span, undefined, { 'braid.workflow.tasks': plan.tasks.length });
  return { id: plan.workflow.id, existing: false };
}
