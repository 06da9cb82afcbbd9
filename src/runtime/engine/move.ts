/**
 * Moving a workflow to another version of its definition (braid upgrade, retry --on-current), decided as a
 * pure function over its task rows and the target's plan: which rows keep their run, which take the target's
 * definition, which are inserted or deleted, and whether the move can happen at all.
 */
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { PlanTask, PlanWait } from '../../compiler/plan.js';
import { renamedTo, taskCorrespondence } from '../../deploy/task-map.js';
import { isFinal } from '../wire/index.js';

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
  /** Final rows the target has no task for: kept as history, marked removed in the target version. */
  history: string[];
  /** Rows not final that the target has no task for, cancelled on request (--cancel-removed), then history too. */
  cancelled: string[];
}

/** How a move treats tasks the target no longer has. */
export interface MoveOptions {
  /** Cancel removed tasks that are not final (a running one still refuses) instead of refusing the move. */
  cancelRemoved?: boolean;
}

export type MoveDecision = { ok: true; plan: MovePlan } | { ok: false; reason: string };

/** States in which a task has not begun: the target may redefine or drop it. */
const NOT_STARTED = new Set(['pending', 'scheduled', 'available']);

/**
 * Decides a move. `from` is the version the rows were made from (its renames are followed through the
 * target's `renamed_from`); `rerun` names rows that a retry is about to run again, which count as not started
 * (a finished workflow's failed tasks take the fixed definition). A started task the target has no task for
 * stays as history when it is final; one that is not refuses the move, unless `cancelRemoved` (then it is
 * cancelled, and a not-started one too, rather than deleted); a running one always refuses. Every other
 * started task must exist in the target with the same kind, and a running one keeps its name.
 */
export function planMove(
  rows: readonly MoveRow[],
  targetTasks: readonly PlanTask[],
  target: NormalizedDefinition,
  from: NormalizedDefinition | undefined,
  rerun?: ReadonlySet<string>,
  options: MoveOptions = {},
): MoveDecision {
  const correspondence = from ? taskCorrespondence(from, target) : new Map();
  const targetByName = new Map(targetTasks.map((t) => [t.name, t]));
  const fromTemplates = new Set(from?.tasks.map((t) => t.name) ?? []);
  const plan: MovePlan = { renames: [], kept: [], redefined: [], inserted: [], deleted: [], history: [], cancelled: [] };
  const claimed = new Map<string, string>();
  for (const row of rows) {
    // a row of a task the version declares follows its correspondence; one added by an extension, its name
    const next = fromTemplates.has(row.template) ? renamedTo(row.template, row.name, correspondence) : targetByName.has(row.name) ? row.name : undefined;
    const task = next !== undefined ? targetByName.get(next) : undefined;
    const started = !NOT_STARTED.has(row.state) && !rerun?.has(row.name);
    if (!task) {
      const removed = rerun?.has(row.name) ? 'deleted' : removedRow(row, options);
      if (removed === 'refuse')
        return {
          ok: false,
          reason:
            `task "${row.name}" is ${row.state}, and the version to move to has no task "${next ?? row.name}"` +
            (row.state === 'running'
              ? ': it moves once its attempt ends (upgrade again then)'
              : `${from && !fromTemplates.has(row.template) ? ' (an extension added it)' : ' (renamed_from: says what it became)'}` +
                '; --cancel-removed cancels it'),
        };
      plan[removed].push(row.name);
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
  // a history row's name is taken: a target task of the same name would meet it
  const taken = new Set([...plan.history, ...plan.cancelled]);
  const clash = plan.inserted.find((n) => taken.has(n));
  if (clash !== undefined) return { ok: false, reason: `task "${clash}" of the version to move to would take the name of a removed task kept as history` };
  return { ok: true, plan };
}

/** What becomes of a row the target has no task for (one a retry runs again is deleted, as one not started). */
function removedRow(row: MoveRow, options: MoveOptions): 'history' | 'cancelled' | 'deleted' | 'refuse' {
  if (isFinal(row.state)) return 'history';
  if (row.state === 'running') return 'refuse';
  if (options.cancelRemoved) return 'cancelled';
  return NOT_STARTED.has(row.state) ? 'deleted' : 'refuse';
}

/** A moving task's wait as far as its evidence goes: its terms, whether it is active, and what counted so far. */
export interface EvidenceRow {
  name: string;
  wait: PlanWait | null;
  wait_started_at: Date | null;
  wait_progress: { signal_terms?: Record<string, { matched?: unknown[] }> } | null;
}

/**
 * What a move would drop from active waits of tasks that take the target's definition (their waits start over
 * with the signals already received): signals that counted for a term and that no signal term of the target's
 * task counts any more (a key renamed without `renamed_from`), and timer terms whose anchor changes. Empty when
 * nothing counted is lost.
 */
export function evidenceLost(rows: readonly EvidenceRow[], plan: MovePlan, targetTasks: readonly PlanTask[]): string[] {
  const renamed = new Map(plan.renames.map((r) => [r.from, r.to]));
  const redefined = new Set(plan.redefined);
  const target = new Map(targetTasks.map((t) => [t.name, t]));
  const lost: string[] = [];
  for (const row of rows) {
    const name = renamed.get(row.name) ?? row.name;
    if (!redefined.has(name) || !row.wait || !row.wait_started_at) continue;
    const next = target.get(name)?.wait ?? null;
    for (const term of row.wait.terms) {
      if (term.kind === 'signal') {
        const counted = row.wait_progress?.signal_terms?.[term.name]?.matched?.length ?? 0;
        if (counted === 0 || countsKey(next, term.name, term.signal)) continue;
        lost.push(
          `${counted} signal${counted === 1 ? '' : 's'} of key ${term.signal} no longer count${counted === 1 ? 's' : ''} for term ${term.name} of task ${name}`,
        );
      } else if (term.kind === 'timer') {
        const now = next?.terms.find((t) => t.name === term.name);
        if (now?.kind === 'timer' && anchorOf(now.timer) !== anchorOf(term.timer))
          lost.push(`timer term ${term.name} of task ${name} would be timed from another anchor (${anchorOf(term.timer)} -> ${anchorOf(now.timer)})`);
      }
    }
  }
  return lost;
}

/** Whether the target wait counts signals of `key` for the term of that name (or, without it, for any signal term). */
function countsKey(wait: PlanWait | null, termName: string, key: string): boolean {
  const signalTerms = (wait?.terms ?? []).flatMap((t) => (t.kind === 'signal' ? [t] : []));
  const same = signalTerms.find((t) => t.name === termName);
  const counts = (t: (typeof signalTerms)[number]) => t.signal === key || t.renamed_from === key;
  return same ? counts(same) : signalTerms.some(counts);
}

function anchorOf(timer: { anchor: string; task?: string }): string {
  return timer.anchor === 'task_finalized' ? `task_finalized ${timer.task}` : timer.anchor;
}
