import { isFailed } from '../engine/decide.js';
import { isFinal } from '../wire/index.js';
import { TaskStateConflictError } from './errors.js';

/** An operator's action on one task. */
export type TaskAction = 'retry' | 'skip' | 'complete';

interface TaskState {
  name: string;
  state: string;
  deps: readonly string[];
  dependents: readonly string[];
}

/** What an action does first, decided from the task's state alone (the statements follow it). */
export type ActionStep =
  /** The task ended without completing: it (and what it ended downstream) opens again first. */
  | { reopen: true }
  /** A retry of a task waiting out its backoff: it runs now. */
  | { retryNow: true }
  /** The task is open (a running one only when forced): complete or skip takes it over. */
  | { takeOver: true; running: boolean };

/**
 * Whether `action` applies to a task in `state`, and how: a final task that did not complete opens again (retry
 * ends there; skip and complete then act on it); an open task is taken over by skip and complete, a running one
 * only with `force` (its attempt is cancelled first); a completed task takes none (its output stands: a
 * whole-workflow retry runs it again). A TaskStateConflictError says what would do instead.
 */
export function actionStep(action: TaskAction, task: { name: string; state: string }, force: boolean): ActionStep {
  const { name, state } = task;
  if (state === 'completed')
    throw new TaskStateConflictError(`task "${name}" completed: its output stands (braid retry ID --mode all runs the workflow again)`);
  if (isFinal(state)) return { reopen: true };
  if (action === 'retry') {
    if (state === 'retryable') return { retryNow: true };
    throw new TaskStateConflictError(`task "${name}" is ${state}: only a task that failed, was cancelled or skipped, or waits to retry, can be retried`);
  }
  if (state === 'running' && !force) throw new TaskStateConflictError(`task "${name}" is running: --force cancels its attempt first (force: true in the API)`);
  return { takeOver: true, running: state === 'running' };
}

/**
 * The tasks that open again with `name`: it and the tasks downstream of it that ended without completing (a
 * failed dep cancelled them, or a skipped one skipped them) and whose other deps completed or open again too (one
 * that another failure ended stays as it is). In a running workflow every task downstream must
 * be final (an open one has counted the task's end already): a TaskStateConflictError names one that is not.
 */
export function reopenSelection(tasks: readonly TaskState[], name: string, workflowRunning: boolean): { selected: Set<string>; failed: number } {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const selected = new Set([name]);
  const stack = [name];
  while (stack.length > 0) {
    for (const d of byName.get(stack.pop()!)?.dependents ?? []) {
      const dependent = byName.get(d);
      if (!dependent || selected.has(d)) continue;
      if (workflowRunning && !isFinal(dependent.state))
        throw new TaskStateConflictError(
          `task "${d}" downstream of "${name}" is ${dependent.state}: wait until it ends (or the workflow does), then act on "${name}"`,
        );
      if (dependent.state === 'completed') continue;
      selected.add(d);
      stack.push(d);
    }
  }
  // a task with a dep that neither completed nor opens again stays as it ended; what depends on it then too
  const blocked = (n: string) => n !== name && (byName.get(n)?.deps ?? []).some((x) => !selected.has(x) && byName.get(x)?.state !== 'completed');
  for (let changed = true; changed; ) {
    changed = false;
    for (const n of selected)
      if (blocked(n)) {
        selected.delete(n);
        changed = true;
      }
  }
  const failed = [...selected].filter((n) => isFailed(byName.get(n)?.state ?? '')).length;
  return { selected, failed };
}
