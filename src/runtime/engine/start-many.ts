import { canonicalJson } from '../../compiler/canonical-json.js';
import type { Plan } from '../../compiler/plan.js';
import { stampable } from '../../compiler/stamp.js';
import { ulid } from '../../compiler/ulid.js';
import { compiler } from '../core/lazy-compiler.js';
import { sealPlan, sensitiveInputs } from '../core/sensitive.js';
import { assertStorable } from '../core/storable.js';
import type { Queryable } from '../db/types.js';
import { BatchRowError, WORKFLOW_ID, WorkflowConflictError, WorkflowIdInvalidError } from '../errors.js';
import type { StoredDefinition } from '../sql/definitions.js';
import { type BatchHead, type BatchWorkflow, insertWorkflowBatch, markAwaitedMany, type TaskRow } from '../sql/insert.js';
import { notifyTimer } from '../sql/waits.js';
import { storedInputs } from '../sql/workflows.js';
import { continued } from '../telemetry/tracing.js';
import { MAX_START_BATCH } from '../wire/index.js';
import { activateWaits, activateWaitsMany } from './advance.js';
import type { AdvanceContext, StartIn } from './context.js';
import { isHeld, placeFlowTasks, taskRows } from './insert.js';
import { startIn } from './start.js';

/** One workflow of a batch: its inputs, and its business key when it has one. */
export interface BatchStart {
  inputs: unknown;
  id?: string;
}

/** A batch's rows checked before anything is written: a list, within the bound, ids well formed, values storable. */
export function batchRows(inputsList: readonly unknown[], ids: readonly (string | null | undefined)[] = []): BatchStart[] {
  if (!Array.isArray(inputsList)) throw new TypeError('startMany takes a list of inputs');
  if (inputsList.length > MAX_START_BATCH) throw new RangeError(`startMany takes at most ${MAX_START_BATCH} rows a call, not ${inputsList.length}`);
  if (ids.length > inputsList.length) throw new RangeError(`${ids.length} ids for ${inputsList.length} rows`);
  return inputsList.map((inputs, row) => {
    const id = ids[row] ?? undefined;
    if (id !== undefined && (typeof id !== 'string' || !WORKFLOW_ID.test(id))) throw new BatchRowError(row, new WorkflowIdInvalidError(id));
    atRow(row, () => assertStorable(inputs, 'the inputs'));
    return { inputs: inputs ?? {}, id };
  });
}

/**
 * Starts a batch of workflows of one definition version in the caller's transaction, all or nothing: each
 * compiled with its inputs (a row that does not compile is a BatchRowError naming it), then every workflow
 * and task inserted in one statement. A business key is honoured as a single start honours it: a workflow
 * that has it already with the same name and inputs is reported `existing` (so is a second row of the batch
 * with the same key and inputs), and one with other inputs or another name is a WorkflowConflictError.
 */
export async function startManyIn(
  tx: Queryable,
  ctx: AdvanceContext,
  def: StoredDefinition,
  rows: readonly BatchStart[],
  o: Omit<StartIn, 'id'> = {},
): Promise<{ id: string; existing: boolean }[]> {
  // a debounced start folds into others by its key: each row takes the single path, in this transaction
  if (def.normalized.debounce) {
    const started: { id: string; existing: boolean }[] = [];
    for (const [row, r] of rows.entries()) started.push(await atRow(row, () => startIn(tx, ctx, def, r.inputs, { ...o, id: r.id })));
    return started;
  }
  const { plans, repeats } = await compileRows(ctx, def, rows, o);
  const tracing = ctx.tracing;
  const spans = plans.map((p, row) =>
    repeats.has(row)
      ? null
      : (tracing?.begin(
          `braid.workflow ${def.name}`,
          'producer',
          { 'braid.workflow.id': p.workflow.id, 'braid.workflow.name': def.name, 'braid.workflow.version': def.hash.slice(0, 12), 'braid.workflow.attempt': 1 },
          tracing.callerContext(o.caller),
        ) ?? null),
  );
  const { head, batch } = batchOf(ctx, plans, rows, repeats, (row) => continued(spans[row], o.caller) ?? null);
  let taken: ReadonlySet<string>;
  try {
    taken = await insertWorkflowBatch(tx, ctx.schema, ctx.s, head, batch, o.extras ?? {});
  } catch (error) {
    for (const span of spans) tracing?.fail(span, error);
    throw error;
  }
  await checkExisting(tx, ctx, def, rows, plans, taken);
  await markAwaitedMany(
    tx,
    ctx.s,
    batch.filter((w) => w.keyed && !taken.has(w.id)).map((w) => w.id),
  );
  await afterInsert(tx, ctx, head, batch, plans, repeats, taken);
  for (const [row, span] of spans.entries()) tracing?.end(span, undefined, { 'braid.workflow.tasks': plans[row].tasks.length });
  return plans.map((p, row) => ({ id: p.workflow.id, existing: repeats.has(row) || taken.has(p.workflow.id) }));
}

/**
 * Each row compiled with its inputs (a row that does not compile is a BatchRowError naming it); a business key
 * repeated in the batch with the same inputs is a repeat of its first row, with other inputs a conflict. When
 * the definition's plans do not depend on inputs (stampable) and it declares no sensitive inputs (whose values
 * its rows' args might hold, sealed), the first row is compiled and the others take its tasks (the same array),
 * each with its inputs checked as compile() checks them: the insert then stamps one set of task rows.
 */
async function compileRows(
  ctx: AdvanceContext,
  def: StoredDefinition,
  rows: readonly BatchStart[],
  o: Omit<StartIn, 'id'>,
): Promise<{ plans: Plan[]; repeats: Map<number, number> }> {
  const { compile, instantiateInputs } = await compiler();
  const plans: Plan[] = [];
  const firstOfKey = new Map<string, number>();
  const repeats = new Map<number, number>();
  const stamp = stampable(def.normalized) && sensitiveInputs(def.normalized).length === 0;
  for (const [row, r] of rows.entries()) {
    const first = plans[0];
    const plan = atRow(row, () => {
      if (stamp && first) {
        const inputs = instantiateInputs(def.normalized, r.inputs);
        assertStorable(inputs, 'the inputs');
        return { ...first, workflow: { ...first.workflow, id: r.id ?? ulid(ctx.now.getTime()), inputs } };
      }
      const p = sealPlan(compile(def.normalized, r.inputs, { id: r.id, now: ctx.now, limits: o.limits, hash: def.hash }), def.normalized, ctx.dataKeys);
      assertStorable(p.workflow.inputs, 'the inputs');
      for (const t of p.tasks) {
        assertStorable(t.args, `the args of task "${t.name}"`);
        assertStorable(t.metadata, `the metadata of task "${t.name}"`);
      }
      return p;
    });
    plans.push(plan);
    if (r.id === undefined) continue;
    const earlier = firstOfKey.get(r.id);
    if (earlier === undefined) firstOfKey.set(r.id, row);
    else if (canonicalJson(plans[earlier].workflow.inputs) !== canonicalJson(plan.workflow.inputs))
      throw new BatchRowError(row, new WorkflowConflictError(r.id, { name: def.name }, def.name));
    else repeats.set(row, earlier);
  }
  return { plans, repeats };
}

/** The rows to insert: every plan but the repeats, with its task rows (made once for plans that share their tasks) and trace context. */
function batchOf(
  ctx: AdvanceContext,
  plans: readonly Plan[],
  rows: readonly BatchStart[],
  repeats: ReadonlyMap<number, number>,
  traceContext: (row: number) => string | null,
): { head: BatchHead; batch: BatchWorkflow[] } {
  const w0 = plans[0].workflow;
  const head: BatchHead = { name: w0.name, hash: w0.definition.hash, output: w0.output, created: new Date(w0.created_at), timeoutMs: w0.timeout_ms ?? null };
  const batch: BatchWorkflow[] = [];
  let made: { from: Plan['tasks']; rows: TaskRow[] } | undefined;
  for (const [row, p] of plans.entries()) {
    if (repeats.has(row)) continue;
    if (made?.from !== p.tasks) made = { from: p.tasks, rows: taskRows(p.tasks, head.created, ctx.now) };
    batch.push({ id: p.workflow.id, keyed: rows[row].id !== undefined, inputs: p.workflow.inputs, traceContext: traceContext(row), tasks: made.rows });
  }
  return { head, batch };
}

/** Business keys the batch found taken: the same name and inputs is the workflow started before; anything else a conflict. */
async function checkExisting(
  tx: Queryable,
  ctx: AdvanceContext,
  def: StoredDefinition,
  rows: readonly BatchStart[],
  plans: readonly Plan[],
  taken: ReadonlySet<string>,
): Promise<void> {
  const found = plans.flatMap((p, row) => (rows[row].id !== undefined && taken.has(p.workflow.id) ? [row] : []));
  if (found.length === 0) return;
  const stored = await storedInputs(
    tx,
    ctx.s,
    found.map((row) => plans[row].workflow.id),
  );
  for (const row of found) {
    const id = plans[row].workflow.id;
    const existing = stored.get(id);
    // a key found taken is there: the insert skipped it under its lock
    if (!existing) continue;
    if (existing.name !== def.name || canonicalJson(existing.inputs) !== canonicalJson(plans[row].workflow.inputs))
      throw new BatchRowError(row, new WorkflowConflictError(id, existing, def.name));
  }
}

/** What a single start does after its insert, for the workflows the batch inserted: deadlines, flow places, root waits. */
async function afterInsert(
  tx: Queryable,
  ctx: AdvanceContext,
  head: BatchHead,
  batch: readonly BatchWorkflow[],
  plans: readonly Plan[],
  repeats: ReadonlyMap<number, number>,
  taken: ReadonlySet<string>,
): Promise<void> {
  const fresh = taken.size === 0 ? batch : batch.filter((w) => !taken.has(w.id));
  // the leader wakes for the deadline as for a timer (every workflow of the batch has the same)
  if (head.timeoutMs !== null && fresh.length > 0) await notifyTimer(tx, ctx.schema, new Date(head.created.getTime() + head.timeoutMs));
  await placeFlowTasks(
    tx,
    ctx.s,
    fresh.flatMap((w) => w.tasks),
  );
  // root waits: those without a condition activated a batch at a time per set of names, the others one by one
  const batched = new Map<string, { names: string[]; ids: string[] }>();
  let roots: { from: Plan['tasks']; names: string[]; conditioned: boolean } | undefined;
  for (const [row, p] of plans.entries()) {
    if (repeats.has(row) || taken.has(p.workflow.id)) continue;
    if (roots?.from !== p.tasks) {
      const held = p.tasks.filter((t) => isHeld(t) && t.deps.length === 0);
      roots = { from: p.tasks, names: held.map((t) => t.name), conditioned: held.some((t) => t.when !== null) };
    }
    if (roots.names.length === 0) continue;
    if (roots.conditioned) await activateWaits(tx, ctx, p.workflow.id, roots.names);
    else {
      const key = roots.names.join('\u0000');
      const group = batched.get(key) ?? { names: roots.names, ids: [] };
      group.ids.push(p.workflow.id);
      batched.set(key, group);
    }
  }
  for (const group of batched.values()) await activateWaitsMany(tx, ctx, group.ids, group.names);
}

/** Runs fn for row `row` of a batch; what it throws is said as that row's. */
function atRow<T>(row: number, fn: () => T): T {
  try {
    const result = fn();
    if (result instanceof Promise) return result.catch((error: unknown) => Promise.reject(new BatchRowError(row, error))) as T;
    return result;
  } catch (error) {
    throw new BatchRowError(row, error);
  }
}
