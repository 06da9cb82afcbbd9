import { declaredKeys } from '../../compiler/declared-keys.js';
import type { Plan, PlanTask } from '../../compiler/plan.js';
import { assertStorable } from '../core/storable.js';
import { sealedKeyIds } from '../db/sealing.js';
import type { Queryable } from '../db/types.js';
import { placeWaiting } from '../sql/flow.js';
import { type InsertExtras, insertTaskRows, insertWorkflow, markAwaited, type TaskRow } from '../sql/insert.js';
import { insertTaskEntries } from '../sql/ranges.js';
import { notifyTimer } from '../sql/waits.js';
import { activateWaits } from './advance.js';
import type { AdvanceContext } from './context.js';
import { isDefaultRetry, readyState } from './decide.js';
import { splitRanges } from './range-split.js';

/** A task that something besides its deps holds pending: a wait, or a condition still to decide. */
export function isHeld(t: Pick<PlanTask, 'wait' | 'when'>): boolean {
  return t.wait !== null || t.when !== null;
}

/**
 * Rows for plan tasks. `depsLeft` and `state` may be overridden (an extension's deps may be final already);
 * by default every dep is still to come.
 */
export function taskRows(
  tasks: readonly PlanTask[],
  createdAt: Date,
  now: Date,
  override: (t: PlanTask) => { deps_left?: number; state?: string } = () => ({}),
): TaskRow[] {
  const dependents = new Map<string, string[]>();
  for (const t of tasks) for (const d of t.deps) dependents.set(d, [...(dependents.get(d) ?? []), t.name]);
  // a dependent whose wait or condition a completion may make ready is decided in the completion's transaction
  const held = new Set(tasks.filter(isHeld).map((t) => t.name));
  return tasks.map((t, i) => {
    const scheduledAt = t.scheduled_at ? new Date(t.scheduled_at) : createdAt;
    const o = override(t);
    const depsLeft = o.deps_left ?? t.deps.length;
    return {
      name: t.name,
      ord: i,
      template: t.template,
      idx: t.index,
      key: t.key,
      kind: t.kind,
      queue: t.queue,
      priority: t.priority,
      state: o.state ?? readyState({ deps_left: depsLeft, held: isHeld(t), scheduled_at: scheduledAt }, now),
      max_attempts: t.max_attempts,
      args: t.args,
      deps: t.deps,
      dependents: dependents.get(t.name) ?? [],
      dependents_wait: (dependents.get(t.name) ?? []).some((d) => held.has(d)),
      wait_keys: t.wait ? declaredKeys(t.wait) : [],
      deps_left: depsLeft,
      scheduled_at: scheduledAt.toISOString(),
      timeout_ms: t.timeout_ms,
      // the default policy is stored as NULL (migration 028): the row is narrower
      retry: isDefaultRetry(t.retry) ? null : t.retry,
      ignore_cancelled_deps: t.ignore_cancelled_deps,
      ignore_discarded_deps: t.ignore_discarded_deps,
      ignore_deleted_deps: t.ignore_deleted_deps,
      ignore_skipped_deps: t.ignore_skipped_deps,
      condition: t.when,
      // the templates as written: each attempt renders them again (a retried workflow's deps may differ)
      deferred: t.deferred && { ...t.deferred, index: t.index, args: t.args, metadata: t.metadata },
      flow: t.flow ?? null,
      wait: t.wait,
      start: t.start,
      metadata: t.metadata,
      description: t.description,
      // args sealed at the start (its inputs' sensitive values) say so: a worker without the key never claims it
      needs_keys: t.deferred ? null : sealedKeyIds(t.args),
    };
  });
}

/** Places the rows inserted available with flow control in their queues' fair order, in the inserting transaction. */
export async function placeFlowTasks(q: Queryable, s: string, rows: readonly TaskRow[]): Promise<void> {
  const waiting = new Map<string, number>();
  for (const r of rows) if (r.flow && r.state === 'available') waiting.set(r.queue, (waiting.get(r.queue) ?? 0) + 1);
  for (const [queue, n] of waiting) await placeWaiting(q, s, queue, n);
}

/**
 * Inserts a plan: the workflow row and every task, with initial states and reverse edges; root tasks that
 * wait become active at once. Workers are woken on commit.
 */
export async function insertPlan(q: Queryable, ctx: AdvanceContext, plan: Plan, extras: InsertExtras = {}): Promise<void> {
  const { s, now } = ctx;
  const w = plan.workflow;
  assertStorable(w.inputs, 'the inputs');
  // templates may make strings too (a CEL "\x00"): each task's values are checked before they reach the database
  for (const t of plan.tasks) {
    assertStorable(t.args, `the args of task "${t.name}"`);
    assertStorable(t.metadata, `the metadata of task "${t.name}"`);
  }
  const created = new Date(w.created_at);
  const rows = taskRows(plan.tasks, created, now);
  await insertWorkflow(
    q,
    s,
    { id: w.id, name: w.name, hash: w.definition.hash, inputs: w.inputs, output: w.output, tasks: plan.tasks.length, created, timeoutMs: w.timeout_ms ?? null },
    extras,
  );
  // the leader wakes for the deadline as for a timer
  if (w.timeout_ms !== undefined) await notifyTimer(q, ctx.schema, new Date(created.getTime() + w.timeout_ms));
  if (rows.length === 0) {
    await markAwaited(q, s, w.id);
    return;
  }
  // runs of alike for_each items go in as ranges (claimed and completed many at once)
  const entries = splitRanges(rows);
  if (entries.length < rows.length) await insertTaskEntries(q, s, w.id, entries, now, { markAwaited: true });
  else await insertTaskRows(q, ctx, w.id, rows, now, { markAwaited: true });
  await placeFlowTasks(q, ctx.s, rows);
  const roots = plan.tasks.filter((t) => isHeld(t) && t.deps.length === 0).map((t) => t.name);
  if (roots.length > 0) await activateWaits(q, ctx, w.id, roots);
}
