import { pathTo, roleFor } from '../../api/route-table.js';
import { PAUSE_SCOPES, type PauseRecord, type PauseScope } from '../../runtime/wire/index.js';
import { get, type Live, post } from './api.js';
import { confirmAction, toast } from './dialog.js';
import { clear, h, time } from './dom.js';

/**
 * The pauses in force (braid pause) with a Resume each, and a form to pause a queue, a kind or a workflow name
 * with a reason; each action confirmed, the list read again after.
 */
export function pausesPage(app: HTMLElement): Live {
  const list = h('tbody');
  const load = async () => {
    const { pauses } = await get<{ pauses: PauseRecord[] }>(pathTo('pauses', {}));
    clear(list);
    if (pauses.length === 0) list.append(h('tr', {}, h('td', { colspan: '5', class: 'muted' }, 'Nothing is paused.')));
    for (const p of pauses) list.append(pauseRow(p, () => void act('resume', p.scope, p.target, '')));
  };
  const act = async (action: 'pause' | 'resume', scope: PauseScope, target: string, reason: string) => {
    const what = action === 'pause' ? 'Pause' : 'Resume';
    const why =
      action === 'pause'
        ? `No worker claims the tasks of ${scope} ${target} until it is resumed; attempts running now finish. It holds across deploys and restarts.`
        : `The tasks of ${scope} ${target} are claimed again at once.`;
    if (!(await confirmAction(`${what} ${scope} ${target}?`, why, what))) return;
    try {
      await post(pathTo(action === 'pause' ? 'pauseScope' : 'resumeScope', {}), { scope, target, reason: reason || undefined, actor: 'ui' });
      toast(`${scope} ${target}: ${action === 'pause' ? 'paused' : 'resumed'}.`);
      await load();
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  };
  const scope = h(
    'select',
    { name: 'scope', 'data-testid': 'pause-scope' },
    PAUSE_SCOPES.map((s) => h('option', { value: s }, s)),
  ) as HTMLSelectElement;
  const target = h('input', { name: 'target', placeholder: 'payments', required: true, 'data-testid': 'pause-target' }) as HTMLInputElement;
  const reason = h('input', { name: 'reason', placeholder: 'why (shown beside every task it holds)', 'data-testid': 'pause-reason' }) as HTMLInputElement;
  const form = h(
    'form',
    {
      class: 'filters',
      'data-needs': roleFor('pauseScope'),
      onsubmit: (e: Event) => {
        e.preventDefault();
        if (target.value.trim()) void act('pause', scope.value as PauseScope, target.value.trim(), reason.value.trim());
      },
    },
    scope,
    target,
    reason,
    h('button', { type: 'submit', 'data-testid': 'pause-submit' }, 'Pause'),
  );
  clear(app);
  app.append(
    h('h1', {}, 'Pauses'),
    form,
    h(
      'table',
      { class: 'list', 'data-testid': 'pause-list' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Scope', 'Target', 'By', 'Reason', ''].map((t) => h('th', {}, t)),
        ),
      ),
      list,
    ),
  );
  void load().catch((error: Error) => toast(error.message, 'error'));
  return { close: () => undefined };
}

/** A pause in force: what, who and when, why, and its Resume. */
function pauseRow(p: PauseRecord, resume: () => void): HTMLElement {
  return h(
    'tr',
    { 'data-pause': `${p.scope} ${p.target}` },
    h('td', {}, p.scope),
    h('td', { class: 'mono' }, p.target),
    h('td', {}, p.actor, ' at ', time(String(p.paused_at))),
    h('td', {}, p.reason ?? ''),
    h('td', {}, h('button', { type: 'button', 'data-testid': 'pause-resume', 'data-needs': roleFor('resumeScope'), onclick: resume }, 'Resume')),
  );
}
