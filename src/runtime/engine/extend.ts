/**
 * Extending a running workflow with tasks written in the definition language: checked and compiled by the
 * compiler's passes (no database), then inserted under the workflow's lock, from a handler atomically with
 * its task's completion or from outside by workflow id.
 */

import { CompileError } from '../../compiler/compile-error.js';
import { defaultsAsWritten, type NormalizedDefinition } from '../../compiler/normalize.js';
import type { Plan, PlanTask } from '../../compiler/plan.js';
import { compiler, validator } from '../core/lazy-compiler.js';
import { sealInputs, sealTasks } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { ExtensionError } from '../errors.js';
import { endPending, lockWorkflows } from '../sql/advance.js';
import { addDependents, countAdded, existingTasks } from '../sql/extend.js';
import { insertTaskRows } from '../sql/insert.js';
import { workflowVersionRef } from '../sql/workflows.js';
import type { ExtensionSpec } from '../worker/handlers.js';
import { activateWaits, advanceWorkflow, cancelPending } from './advance.js';
import type { AdvanceContext } from './context.js';
import { depsOutcome, type FinalState, isFinal } from './decide.js';
import { isHeld, taskRows } from './insert.js';

/** The passes an extension goes through, loaded by the caller (the compiler is loaded on first use). */
export interface ExtensionCompiler {
  validate: typeof import('../../compiler/validate.js').validate;
  compile: typeof import('../../compiler/instantiate.js').compile;
}

/** Stands for an existing task while the new ones are checked: deps and CEL references to it resolve. */
const EXISTING_KIND = 'braid.existing';

/**
 * Checks and compiles an extension against the workflow's existing tasks. Pure: the caller supplies the
 * compiler's two passes, the pinned definition (for the inputs schema), the workflow, and its tasks' names
 * and templates.
 */
export function compileExtension(
  { validate, compile }: ExtensionCompiler,
  def: NormalizedDefinition | undefined,
  w: { id: string; name: string; inputs: unknown },
  existing: readonly { name: string; template: string }[],
  spec: ExtensionSpec,
  now: Date,
  knownWorkflows: readonly string[] = [],
): PlanTask[] {
  if (typeof spec !== 'object' || spec === null || typeof spec.tasks !== 'object' || spec.tasks === null || Array.isArray(spec.tasks)) {
    throw new ExtensionError('an extension is { tasks: { NAME: task, ... } }');
  }
  const names = Object.keys(spec.tasks);
  if (names.length === 0) throw new ExtensionError('an extension adds at least one task');
  const taken = new Set(existing.flatMap((t) => [t.name, t.template]));
  const clash = names.filter((n) => taken.has(n));
  if (clash.length > 0) throw new ExtensionError(`workflow ${w.id} already has task${clash.length > 1 ? 's' : ''} ${clash.map((n) => `"${n}"`).join(', ')}`);
  const templates = [...new Set(existing.map((t) => t.template))];
  const synthetic = {
    name: w.name,
    ...(def?.inputs !== undefined ? { inputs: def.inputs } : {}),
    // the workflow's defaults hold for the tasks it gains as for those it was started with
    ...(def?.defaults !== undefined ? { defaults: defaultsAsWritten(def.defaults) } : {}),
    tasks: { ...Object.fromEntries(templates.map((t) => [t, { kind: EXISTING_KIND }])), ...spec.tasks },
  };
  const result = validate([{ path: `extension of ${w.name}`, content: JSON.stringify(synthetic) }], { knownWorkflows });
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new ExtensionError(`the extension is not valid: ${errors.map((d) => `${d.path}: ${d.message} [${d.rule}]`).join('; ')}`, errors);
  let plan: Plan;
  try {
    plan = compile(result.definitions[0], w.inputs, { id: w.id, now });
  } catch (error) {
    if (error instanceof CompileError)
      throw new ExtensionError(`the extension does not compile: ${error.diagnostics.map((d) => d.message).join('; ')}`, error.diagnostics);
    throw error;
  }
  const byTemplate = new Map<string, string[]>();
  for (const t of existing) byTemplate.set(t.template, [...(byTemplate.get(t.template) ?? []), t.name]);
  // a dep on a stand-in becomes a dep on the existing task, or on every expansion of it
  const standIns = new Set(plan.tasks.filter((t) => t.kind === EXISTING_KIND).map((t) => t.name));
  return plan.tasks
    .filter((t) => t.kind !== EXISTING_KIND)
    .map((t) => ({ ...t, deps: [...new Set(t.deps.flatMap((d) => (standIns.has(d) ? (byTemplate.get(d) ?? []) : [d])))] }));
}

/**
 * Inserts compiled extension tasks into a running workflow whose lock the caller holds: deps already final
 * count at once (a failed one cancels the new task unless its flags ignore it), the existing deps learn their
 * new dependents, waits with every dep satisfied become active.
 */
export async function applyExtension(q: Queryable, ctx: AdvanceContext, workflowId: string, tasks: readonly PlanTask[]): Promise<string[]> {
  const { s, now } = ctx;
  const w = await workflowVersionRef(q, s, workflowId);
  if (!w) throw new ExtensionError(`no workflow with id "${workflowId}"`);
  if (w.state !== 'running') throw new ExtensionError(`workflow ${workflowId} is ${w.state}: only a running workflow can be extended`);
  const existing = await existingTasks(q, s, workflowId);
  const byName = new Map(existing.map((t) => [t.name, t]));
  // under the lock: a concurrent extension that committed first is seen here
  const clash = tasks.filter((t) => byName.has(t.name) || existing.some((e) => e.template === t.template));
  if (clash.length > 0)
    throw new ExtensionError(
      `workflow ${workflowId} already has task${clash.length > 1 ? 's' : ''} ${[...new Set(clash.map((t) => `"${t.template}"`))].join(', ')}`,
    );
  const unknown = tasks.flatMap((t) => t.deps.filter((d) => !byName.has(d) && !tasks.some((x) => x.name === d)));
  if (unknown.length > 0) throw new ExtensionError(`unknown deps: ${[...new Set(unknown)].join(', ')}`);
  const failing = new Map<string, string>();
  const skipping = new Map<string, string>();
  const rows = taskRows(tasks, now, now, (t) => {
    const final = t.deps.flatMap((d) => {
      const dep = byName.get(d);
      return dep && isFinal(dep.state) ? [{ name: d, state: dep.state as FinalState }] : [];
    });
    const decided = depsOutcome(t, final);
    if (decided.outcome !== 'satisfied')
      (decided.outcome === 'failed' ? failing : skipping).set(t.name, `dependency "${decided.dep!.name}" was ${decided.dep!.state}`);
    // held pending until cancelled or skipped below, with its dependents, as a failed or skipped dep does
    const left = t.deps.length - final.length;
    return decided.outcome !== 'satisfied' ? { deps_left: left, state: 'pending' } : { deps_left: left };
  });
  await insertTaskRows(q, ctx, workflowId, rows, now);
  const reverse = new Map<string, { names: string[]; wait: boolean }>();
  for (const t of tasks) {
    for (const d of t.deps) {
      if (!byName.has(d)) continue;
      const r = reverse.get(d) ?? { names: [], wait: false };
      r.names.push(t.name);
      r.wait ||= isHeld(t);
      reverse.set(d, r);
    }
  }
  await addDependents(
    q,
    s,
    workflowId,
    [...reverse].map(([name, r]) => ({ name, ...r })),
  );
  await countAdded(q, s, workflowId, tasks.length);
  await cancelPending(q, ctx, workflowId, failing);
  const skipped = await endPending(q, s, workflowId, now, 'skipped', 'dependency', skipping);
  if (skipped.length > 0) await advanceWorkflow(q, ctx, workflowId, skipped);
  const ended = (name: string) => failing.has(name) || skipping.has(name);
  const waiting = rows.filter((r) => (r.wait !== null || r.condition !== null) && r.deps_left === 0 && !ended(r.name)).map((r) => r.name);
  await activateWaits(q, ctx, workflowId, waiting);
  return tasks.map((t) => t.name);
}

/** Locks the workflow, then compiles and applies an extension in the caller's transaction. */
export async function extendWorkflow(
  q: Queryable,
  ctx: AdvanceContext,
  workflowId: string,
  spec: ExtensionSpec,
  knownWorkflows: readonly string[],
): Promise<string[]> {
  const locked = await lockWorkflows(q, ctx.s, [workflowId]);
  if (!locked.has(workflowId)) throw new ExtensionError(`no workflow with id "${workflowId}"`);
  const tasks = await compileFor(q, ctx, workflowId, spec, knownWorkflows);
  return applyExtension(q, ctx, workflowId, tasks);
}

/** Compiles an extension against a workflow as it is now (no lock needed: applyExtension checks again under it). */
export async function compileFor(
  q: Queryable,
  ctx: AdvanceContext,
  workflowId: string,
  spec: ExtensionSpec,
  knownWorkflows: readonly string[],
): Promise<PlanTask[]> {
  const w = await workflowVersionRef(q, ctx.s, workflowId);
  if (!w) throw new ExtensionError(`no workflow with id "${workflowId}"`);
  const def = await ctx.definitions.find(q, w.name, w.definition_hash);
  const existing = await existingTasks(q, ctx.s, workflowId);
  const [{ validate }, { compile }] = await Promise.all([validator(), compiler()]);
  const tasks = compileExtension({ validate, compile }, def, w, existing, spec, ctx.now, knownWorkflows);
  // what the new tasks' args take from sensitive inputs is sealed, as the workflow's own were
  const sealed = def && sealInputs(w.inputs, def, ctx.dataKeys);
  return sealed ? sealTasks(tasks, sealed.secrets, ctx.dataKeys!) : tasks;
}
