import type { Plan, PlanTask } from '../../compiler/plan.js';
import { readyState } from '../decide.js';
import type { Queryable } from '../db/types.js';
import { declaredKeys } from '../wait-eval.js';
import { activateWaits } from '../waits.js';
import type { AdvanceContext } from './advance.js';
import { notifyQueues } from './advance.js';
import { awaitLockKey } from './waits.js';
import { assertStorable } from '../storable.js';

export interface InsertExtras {
  parentId?: string | null;
  group?: string | null;
}

/** A task as inserted: the plan's task with its initial state, reverse edges and wait keys. */
export type TaskRow = ReturnType<typeof taskRows>[number];

/**
 * Rows for plan tasks. `depsLeft` and `state` may be overridden (an extension's deps may be final already);
 * by default every dep is still to come.
 */
export function taskRows(tasks: readonly PlanTask[], createdAt: Date, now: Date, override: (t: PlanTask) => { deps_left?: number; state?: string } = () => ({})) {
  const dependents = new Map<string, string[]>();
  for (const t of tasks) for (const d of t.deps) dependents.set(d, [...(dependents.get(d) ?? []), t.name]);
  const waits = new Set(tasks.filter((t) => t.wait !== null).map((t) => t.name));
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
      state: o.state ?? readyState({ deps_left: depsLeft, has_wait: t.wait !== null, scheduled_at: scheduledAt }, now),
      max_attempts: t.max_attempts,
      args: t.args,
      deps: t.deps,
      dependents: dependents.get(t.name) ?? [],
      dependents_wait: (dependents.get(t.name) ?? []).some((d) => waits.has(d)),
      wait_keys: t.wait ? declaredKeys(t.wait) : [],
      deps_left: depsLeft,
      scheduled_at: scheduledAt.toISOString(),
      timeout_ms: t.timeout_ms,
      retry: t.retry,
      ignore_cancelled_deps: t.ignore_cancelled_deps,
      ignore_discarded_deps: t.ignore_discarded_deps,
      ignore_deleted_deps: t.ignore_deleted_deps,
      wait: t.wait,
      start: t.start,
      metadata: t.metadata,
      description: t.description,
    };
  });
}

/** Inserts task rows of one workflow in their order (the order loads and status list them in). */
export async function insertTaskRows(q: Queryable, s: string, workflowId: string, rows: readonly TaskRow[], now: Date, before = ''): Promise<void> {
  await q.query(
    `${before}
     INSERT INTO ${s}.tasks (workflow_id, name, template, idx, key, kind, queue, priority, state, max_attempts, args, deps, dependents, deps_left,
                             scheduled_at, timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps, wait, start, metadata,
                             description, created_at, dependents_wait, wait_keys)
     SELECT $1, x.name, x.template, x.idx, x.key, x.kind, x.queue, x.priority, x.state, x.max_attempts, coalesce(x.args, 'null'::jsonb),
            ARRAY(SELECT jsonb_array_elements_text(x.deps)), ARRAY(SELECT jsonb_array_elements_text(x.dependents)), x.deps_left,
            x.scheduled_at, x.timeout_ms, x.retry, x.ignore_cancelled_deps, x.ignore_discarded_deps, x.ignore_deleted_deps, x.wait, x.start,
            coalesce(x.metadata, '{}'::jsonb), x.description, $2, x.dependents_wait, ARRAY(SELECT jsonb_array_elements_text(x.wait_keys))
       FROM jsonb_to_recordset($3::jsonb) AS x(name text, ord int, template text, idx int, key text, kind text, queue text, priority int, state text,
            max_attempts int, args jsonb, deps jsonb, dependents jsonb, deps_left int, scheduled_at timestamptz, timeout_ms int, retry jsonb,
            ignore_cancelled_deps boolean, ignore_discarded_deps boolean, ignore_deleted_deps boolean, wait jsonb, start jsonb, metadata jsonb,
            description text, dependents_wait boolean, wait_keys jsonb)
      ORDER BY x.ord`,
    [workflowId, now, JSON.stringify(rows)],
  );
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
  // the id's advisory lock orders this insert with a wait registering on it (see registerWaiters)
  await q.query(
    `WITH l AS (SELECT pg_advisory_xact_lock(${awaitLockKey('$1::text')}))
     INSERT INTO ${s}.workflows (id, name, definition_hash, inputs, output_template, tasks_total, tasks_open, parent_id, group_name, created_at, attempt_started_at)
     SELECT $1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $9 FROM l`,
    [w.id, w.name, w.definition.hash, JSON.stringify(w.inputs), w.output === null ? null : JSON.stringify(w.output), plan.tasks.length, extras.parentId ?? null, extras.group ?? null, created],
  );
  // a later statement, so its snapshot shows waits registered before this insert took the lock
  const marked = `UPDATE ${s}.workflows SET has_waiters = true WHERE id = $1::text AND EXISTS (SELECT 1 FROM ${s}.workflow_waiters WHERE awaited_id = $1::text)`;
  if (rows.length === 0) {
    await q.query(marked, [w.id]);
    return;
  }
  await insertTaskRows(q, s, w.id, rows, now, `WITH marked AS (${marked} RETURNING id)`);
  const roots = plan.tasks.filter((t) => t.wait !== null && t.deps.length === 0).map((t) => t.name);
  if (roots.length > 0) await activateWaits(q, ctx, w.id, roots);
  await notifyQueues(q, ctx.schema, rows.filter((r) => r.state === 'available').map((r) => r.queue));
}
