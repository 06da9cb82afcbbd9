/**
 * Moving a workflow to another version of its definition (braid upgrade, retry --on-current), decided as a
 * pure function over its task rows and the target's plan: which rows keep their run, which take the target's
 * definition, which are inserted or deleted, and whether the move can happen at all.
 */
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { PlanTask } from '../../compiler/plan.js';
import { renamedTo, taskCorrespondence } from '../../deploy/task-map.js';

/** A task row as the move reads it. */
export interface MoveRow {
  name: string;
  template: string;
  kind: string;
  state: string;
}

export interface MovePlan {
  /** Rows whose name changes (renamed_from): old name -> target name. */
  renames: { from: string; to: string }[];
  /** Started rows, by target name: they keep their run, and take the target's deps and dependents. */
  kept: string[];
  /** Rows not started, by target name: they take the target's definition. */
  redefined: string[];
  /** Target tasks that no row becomes: inserted. */
  inserted: string[];
  /** Rows not started that the target has no task for (by their current name): deleted. */
  deleted: string[];
}

export type MoveDecision = { ok: true; plan: MovePlan } | { ok: false; reason: string };

/** States in which a task has not begun: the target may redefine or drop it. */
const NOT_STARTED = new Set(['pending', 'scheduled', 'available']);

/**
 * Decides a move. `from` is the version the rows were made from (its renames are followed through the
 * target's `renamed_from`); `rerun` names rows that a retry is about to run again, which count as not started
 * (a finished workflow's failed tasks take the fixed definition). Every started task must exist in the target
 * with the same kind, and a running one keeps its name (its attempt completes by it).
 */
export function planMove(
  rows: readonly MoveRow[],
  targetTasks: readonly PlanTask[],
  target: NormalizedDefinition,
  from: NormalizedDefinition | undefined,
  rerun?: ReadonlySet<string>,
): MoveDecision {
  const correspondence = from ? taskCorrespondence(from, target) : new Map();
  const targetByName = new Map(targetTasks.map((t) => [t.name, t]));
  const fromTemplates = new Set(from?.tasks.map((t) => t.name) ?? []);
  const plan: MovePlan = { renames: [], kept: [], redefined: [], inserted: [], deleted: [] };
  const claimed = new Map<string, string>();
  for (const row of rows) {
    // a row of a task the version declares follows its correspondence; one added by an extension, its name
    const next = fromTemplates.has(row.template) ? renamedTo(row.template, row.name, correspondence) : targetByName.has(row.name) ? row.name : undefined;
    const task = next !== undefined ? targetByName.get(next) : undefined;
    const started = !NOT_STARTED.has(row.state) && !rerun?.has(row.name);
    if (!task) {
      if (started)
        return {
          ok: false,
          reason:
            `task "${row.name}" is ${row.state}, and the version to move to has no task ` +
            `"${next ?? row.name}"${from && !fromTemplates.has(row.template) ? ' (an extension added it)' : ' (renamed_from: says what it became)'}`,
        };
      plan.deleted.push(row.name);
      continue;
    }
    if (claimed.has(task.name)) return { ok: false, reason: `tasks "${claimed.get(task.name)}" and "${row.name}" would both become "${task.name}"` };
    claimed.set(task.name, row.name);
    if (started && task.kind !== row.kind)
      return { ok: false, reason: `task "${row.name}" is ${row.state} with kind ${row.kind}, and the version to move to runs it as kind ${task.kind}` };
    if (task.name !== row.name) {
      if (row.state === 'running')
        return { ok: false, reason: `task "${row.name}" is running: it takes its new name "${task.name}" once its attempt ends (upgrade again then)` };
      plan.renames.push({ from: row.name, to: task.name });
    }
    (started ? plan.kept : plan.redefined).push(task.name);
  }
  for (const t of targetTasks) if (!claimed.has(t.name)) plan.inserted.push(t.name);
  return { ok: true, plan };
}
