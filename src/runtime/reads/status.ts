import { isFinal } from '../engine/decide.js';
import type { TaskRecord, WaitSnapshot } from '../sql/workflows.js';
import type { TermValue } from '../waits/decide.js';
import { signalCountText } from '../wire/index.js';

/** Why a task was skipped: its condition was false, or a dep it does not ignore was skipped. Null unless skipped. */
export function skipReason(task: TaskRecord, byName: ReadonlyMap<string, TaskRecord>): string | null {
  if (task.state !== 'skipped') return null;
  if (task.when_met === false) return `when was false: ${task.when}`;
  const dep = task.deps.find((d) => byName.get(d)?.state === 'skipped');
  return dep ? `dependency "${dep}" was skipped` : 'skipped';
}

/**
 * Why a task is not running, in words, derived from its row: the deps it waits on, its wait, its schedule,
 * or a kind that no live runtime process handles. Null for running and final tasks.
 */
export function pendingReason(
  task: TaskRecord,
  byName: ReadonlyMap<string, TaskRecord>,
  liveKinds: ReadonlySet<string>,
  /** What holds the task back beyond its state: flow control for an available one (runtime/flow/reason.ts), a debounce for a scheduled one. */
  flow: string | null = null,
): string | null {
  const noHandler = liveKinds.has(task.kind) || task.kind === 'braid.start' ? '' : `; no live handler for kind "${task.kind}"`;
  switch (task.state) {
    case 'pending': {
      if (task.deps_left > 0) {
        const open = task.deps.filter((d) => {
          const dep = byName.get(d);
          return !dep || !isFinal(dep.state);
        });
        return `waiting on deps: ${open.join(', ')}${noHandler}`;
      }
      if (task.wait) return `${describeWait(task.wait)}${noHandler}`;
      return `pending${noHandler}`;
    }
    case 'scheduled':
      if (flow) return `${flow}${noHandler}`;
      return `scheduled for ${new Date(task.scheduled_at).toISOString()}${noHandler}`;
    case 'retryable':
      return `retrying at ${new Date(task.scheduled_at).toISOString()} (attempt ${task.attempt} of ${task.max_attempts} failed)${noHandler}`;
    case 'available':
      if (flow) return `${flow}${noHandler}`;
      return noHandler
        ? `waiting for a handler${noHandler}`
        : task.flow?.fairness
          ? `waiting its turn (fairness key "${task.flow.fairness.key}")`
          : 'waiting for a free worker';
    default:
      return null;
  }
}

/** An active wait in words: the expression, then each term's value at the last evaluation. */
export function describeWait(wait: WaitSnapshot): string {
  const last = wait.last_evaluation;
  if (!last) return `waiting on ${wait.expr}`;
  const links = new Set(wait.terms.filter((t) => t.kind === 'signal' && t.callback).map((t) => t.name));
  return `waiting on ${wait.expr}: ${last.terms.map((t) => termText(t, links.has(t.name))).join(', ')}${last.error ? `; error: ${last.error}` : ''}`;
}

/** A term's value in words; a callback term's signals are its links' answers. */
function termText(t: TermValue, callback: boolean): string {
  const error = t.error ? ` (error: ${t.error})` : '';
  switch (t.kind) {
    case 'signal': {
      const noun = callback ? ' link answer' : ' signal';
      return `${t.name} ${signalCountText(t)}${t.distinct ? '' : `${noun}${t.required === 1 ? '' : 's'}`}${error}`;
    }
    case 'timer':
      return `${t.name} ${t.fired ? 'fired' : t.fire_at ? `fires at ${t.fire_at}` : 'not scheduled'}`;
    case 'workflows':
      return (
        `${t.name} waiting on workflows ${(t.ids ?? []).join(', ') || '(none)'}: ` +
        `${t.completed}/${t.required} completed${t.failed ? `, ${t.failed} failed` : ''}${t.outcome === 'failed' ? ' (failed)' : ''}${error}`
      );
    default:
      return t.error ? `${t.name} error: ${t.error}` : `${t.name} ${t.value}`;
  }
}
