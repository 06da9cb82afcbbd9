import { pathTo, roleFor } from '../../api/route-table.js';
import { post } from './api.js';
import { confirmAction, toast } from './dialog.js';
import { h } from './dom.js';
import type { Task } from './types.js';

type Action = 'retry' | 'skip' | 'complete';

const ROUTE = { retry: 'taskRetry', skip: 'taskSkip', complete: 'taskComplete' } as const;

const WHAT: Record<Action, string> = {
  retry: 'It runs again, with the tasks it ended downstream (a finished workflow starts a new attempt).',
  skip: 'It ends skipped: its dependents apply their ignore_skipped_deps as for any skipped task.',
  complete: 'It completes with the output below (checked against its returns): its dependents run.',
};

/**
 * The task panel's operator actions (braid task): Retry for a task that ended without completing, Skip and
 * Complete for one that has not; each confirmed with a reason asked (and the output, for Complete). A running
 * task's attempt is cancelled first (the dialog says so). The live stream shows what follows.
 */
export function taskActions(workflowId: string, task: Task): HTMLElement | null {
  const ended = ['cancelled', 'discarded', 'skipped'].includes(task.state);
  const open = !ended && task.state !== 'completed';
  const actions: Action[] = [...(ended || task.state === 'retryable' ? (['retry'] as const) : []), ...(open || ended ? (['skip', 'complete'] as const) : [])];
  if (actions.length === 0) return null;
  return h(
    'div',
    { class: 'actions', 'data-testid': 'task-actions', 'data-needs': roleFor('taskRetry') },
    actions.map((a) =>
      h('button', { type: 'button', 'data-testid': `task-${a}`, onclick: () => void act(workflowId, task, a) }, a[0].toUpperCase() + a.slice(1)),
    ),
  );
}

async function act(workflowId: string, task: Task, action: Action): Promise<void> {
  const reason = h('input', { name: 'reason', placeholder: 'why (recorded in the audit trail)', 'data-testid': 'task-action-reason' }) as HTMLInputElement;
  const output = h('textarea', { rows: 4, 'data-testid': 'task-action-output', placeholder: '{"id": "..."}' }) as HTMLTextAreaElement;
  const running = task.state === 'running';
  const body = h(
    'div',
    {},
    h('p', {}, WHAT[action]),
    running ? h('p', { class: 'reason' }, 'The task is running: its attempt is cancelled first.') : null,
    action === 'complete' ? h('label', {}, 'Output (JSON) ', output) : null,
    h('label', {}, 'Reason ', reason),
  );
  const label = action[0].toUpperCase() + action.slice(1);
  if (!(await confirmAction(`${label} task ${task.name}?`, body, label))) return;
  let parsed: unknown = null;
  if (action === 'complete' && output.value.trim() !== '') {
    try {
      parsed = JSON.parse(output.value);
    } catch (error) {
      toast(`the output is not JSON: ${(error as Error).message}`, 'error');
      return;
    }
  }
  try {
    const path = pathTo(ROUTE[action], { id: workflowId, task: task.name });
    await post(path, { reason: reason.value.trim() || undefined, actor: 'ui', force: running, ...(action === 'complete' ? { output: parsed } : {}) });
    toast(`${task.name}: ${action === 'complete' ? 'completed by hand' : action === 'skip' ? 'skipped' : 'retried'}.`);
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}
