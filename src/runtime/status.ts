import { isFinal } from './decide.js';
import type { TaskRecord } from './sql/workflows.js';

/**
 * Why a task is not running, in words, derived from its row: the deps it waits on, its wait, its schedule,
 * or a kind that no live runtime process handles. Null for running and final tasks.
 */
export function pendingReason(task: TaskRecord, byName: ReadonlyMap<string, TaskRecord>, liveKinds: ReadonlySet<string>): string | null {
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
      if (task.wait) return `waiting on its condition: ${(task.wait as { expr: string }).expr}${noHandler}`;
      return `pending${noHandler}`;
    }
    case 'scheduled':
      return `scheduled for ${new Date(task.scheduled_at).toISOString()}${noHandler}`;
    case 'retryable':
      return `retrying at ${new Date(task.scheduled_at).toISOString()} (attempt ${task.attempt} of ${task.max_attempts} failed)${noHandler}`;
    case 'available':
      return noHandler ? `waiting for a handler${noHandler}` : 'waiting for a free worker';
    default:
      return null;
  }
}
