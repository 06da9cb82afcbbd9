import { canonicalJson } from '../../compiler/canonical-json.js';
import type { Plan } from '../../compiler/plan.js';
import { compiler } from '../core/lazy-compiler.js';
import { sealPlan } from '../core/sensitive.js';
import { assertStorable } from '../core/storable.js';
import type { Queryable } from '../db/types.js';
import { BatchRowError, WORKFLOW_ID, WorkflowConflictError, WorkflowIdInvalidError } from '../errors.js';
import type { StoredDefinition } from '../sql/definitions.js';
import { type BatchWorkflow, insertWorkflowBatch, markAwaitedMany } from '../sql/insert.js';
import { notifyTimer } from '../sql/waits.js';
import { storedInputs } from '../sql/workflows.js';
import { continued } from '../telemetry/tracing.js';
import { MAX_START_BATCH } from '../wire/index.js';
import { activateWaits } from './advance.js';
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
  const batch = batchOf(ctx, plans, rows, repeats, (row) => continued(spans[row], o.caller) ?? null);
  let inserted: Set<string>;
  try {
    inserted = await insertWorkflowBatch(tx, ctx.schema, ctx.s, batch, o.extras ?? {});
  } catch (error) {
    for (const span of spans) tracing?.fail(span, error);
    throw error;
  }
  await checkExisting(tx, ctx, def, rows, plans, inserted);
  await markAwaitedMany(
    tx,
    ctx.s,
    batch.filter((w) => w.keyed && inserted.has(w.id)).map((w) => w.id),
  );
  await afterInsert(tx, ctx, batch, plans, inserted);
  for (const [row, span] of spans.entries()) tracing?.end(span, undefined, { 'braid.workflow.tasks': plans[row].tasks.length });
  return plans.map((p, row) => ({ id: p.workflow.id, existing: repeats.has(row) || !inserted.has(p.workflow.id) }));
}

/**
 * Each row compiled with its inputs (a row that does not compile is a BatchRowError naming it); a business key
 * repeated in the batch with the same inputs is a repeat of its first row, with other inputs a conflict.
 */
async function compileRows(
  ctx: AdvanceContext,
  def: StoredDefinition,
  rows: readonly BatchStart[],
  o: Omit<StartIn, 'id'>,
): Promise<{ plans: Plan[]; repeats: Map<number, number> }> {
  const { compile } = await compiler();
  const plans: Plan[] = [];
  const firstOfKey = new Map<string, number>();
  const repeats = new Map<number, number>();
  for (const [row, r] of rows.entries()) {
    const plan = atRow(row, () => {
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
    const first = firstOfKey.get(r.id);
    if (first === undefined) firstOfKey.set(r.id, row);
    else if (canonicalJson(plans[first].workflow.inputs) !== canonicalJson(plan.workflow.inputs))
      throw new BatchRowError(row, new WorkflowConflictError(r.id, { name: def.name }, def.name));
    else repeats.set(row, first);
  }
  return { plans, repeats };
}

/** The rows to insert: every plan but the repeats, with its task rows and its trace context. */
function batchOf(
  ctx: AdvanceContext,
  plans: readonly Plan[],
  rows: readonly BatchStart[],
  repeats: ReadonlyMap<number, number>,
  traceContext: (row: number) => string | null,
): BatchWorkflow[] {
  const batch: BatchWorkflow[] = [];
  for (const [row, p] of plans.entries()) {
    if (repeats.has(row)) continue;
    const w = p.workflow;
    const created = new Date(w.created_at);
    batch.push({
      id: w.id,
      keyed: rows[row].id !== undefined,
      name: w.name,
      hash: w.definition.hash,
      inputs: w.inputs,
      output: w.output,
      created,
      timeoutMs: w.timeout_ms ?? null,
      traceContext: traceContext(row),
      tasks: taskRows(p.tasks, created, ctx.now),
    });
  }
  return batch;
}

/** Business keys the batch found taken: the same name and inputs is the workflow started before; anything else a conflict. */
async function checkExisting(
  tx: Queryable,
  ctx: AdvanceContext,
  def: StoredDefinition,
  rows: readonly BatchStart[],
  plans: readonly Plan[],
  inserted: ReadonlySet<string>,
): Promise<void> {
  const taken = plans.flatMap((p, row) => (rows[row].id !== undefined && !inserted.has(p.workflow.id) ? [row] : []));
  if (taken.length === 0) return;
  const stored = await storedInputs(
    tx,
    ctx.s,
    taken.map((row) => plans[row].workflow.id),
  );
  for (const row of taken) {
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
  batch: readonly BatchWorkflow[],
  plans: readonly Plan[],
  inserted: ReadonlySet<string>,
): Promise<void> {
  const fresh = batch.filter((w) => inserted.has(w.id));
  const deadlines = fresh.filter((w) => w.timeoutMs !== null).map((w) => w.created.getTime() + w.timeoutMs!);
  // the leader wakes for the earliest deadline as for a timer; it finds the later ones then
  if (deadlines.length > 0) await notifyTimer(tx, ctx.schema, new Date(Math.min(...deadlines)));
  await placeFlowTasks(
    tx,
    ctx.s,
    fresh.flatMap((w) => w.tasks),
  );
  for (const p of plans) {
    if (!inserted.has(p.workflow.id)) continue;
    const roots = p.tasks.filter((t) => isHeld(t) && t.deps.length === 0).map((t) => t.name);
    if (roots.length > 0) await activateWaits(tx, ctx, p.workflow.id, roots);
  }
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
