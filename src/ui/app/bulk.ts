import { pathTo, roleFor } from '../../api/route-table.js';
import type { BulkCreated, BulkOperation } from '../../runtime/wire/index.js';
import { get, post } from './api.js';
import { confirmAction, toast } from './dialog.js';
import { h } from './dom.js';

type Action = 'retry' | 'cancel';

/**
 * The list's bulk actions (braid bulk) over what its filters select: a preview count first (a dry run), then a
 * confirmation that asks an operation name and a reason (and, for a retry, whether on the current version), then
 * the operation's progress until it ends.
 */
export function bulkBar(search: URLSearchParams): HTMLElement {
  const filter: Record<string, string | string[]> = {};
  for (const [k, v] of search) filter[k] = k === 'input' ? [...((filter[k] as string[] | undefined) ?? []), v] : v;
  const progress = h('span', { class: 'muted', 'data-testid': 'bulk-progress' });
  const act = (action: Action) => void run(action, filter, progress);
  return h(
    'div',
    { class: 'actions', 'data-testid': 'bulk-bar', 'data-needs': roleFor('bulkCreate') },
    h('button', { type: 'button', 'data-testid': 'bulk-retry', onclick: () => act('retry') }, 'Retry all matching…'),
    ' ',
    h('button', { type: 'button', 'data-testid': 'bulk-cancel', onclick: () => act('cancel') }, 'Cancel all matching…'),
    ' ',
    progress,
  );
}

async function run(action: Action, filter: Record<string, string | string[]>, progress: HTMLElement): Promise<void> {
  try {
    const preview = await post<BulkCreated>(pathTo('bulkCreate', {}), { action, filter, dry_run: true });
    if (preview.total === 0) return toast('No workflow matches the filters.');
    const name = h('input', { name: 'name', value: preview.name, 'data-testid': 'bulk-name' }) as HTMLInputElement;
    const reason = h('input', { name: 'reason', placeholder: 'why (recorded with the operation)', 'data-testid': 'bulk-reason' }) as HTMLInputElement;
    const current = h('input', { type: 'checkbox', 'data-testid': 'bulk-on-current' }) as HTMLInputElement;
    const body = h(
      'div',
      {},
      h('p', { 'data-testid': 'bulk-count' }, countText(preview)),
      h('label', {}, 'Operation name ', name),
      h('label', {}, 'Reason ', reason),
      action === 'retry' ? h('label', {}, current, ' on the current version') : null,
    );
    const label = `${action === 'retry' ? 'Retry' : 'Cancel'} ${preview.total}`;
    if (!(await confirmAction(`${label} workflows?`, body, label))) return;
    const options = action === 'retry' ? { on_current: current.checked } : {};
    const made = await post<BulkCreated>(pathTo('bulkCreate', {}), {
      action,
      filter,
      name: name.value.trim(),
      reason: reason.value.trim() || undefined,
      options,
      actor: 'ui',
    });
    for (let op = made.operation!; ; ) {
      progress.textContent = `${op.name}: ${op.done + op.failed}/${op.total} (${op.failed} failed) ${op.state}`;
      progress.dataset.state = op.state;
      if (op.state !== 'running') break;
      await new Promise((resolve) => setTimeout(resolve, 500));
      op = await get<BulkOperation>(pathTo('bulkStatus', { name: op.name }));
    }
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}

/** `3 workflows match: 01J..., 01J..., …`. */
function countText(p: BulkCreated): string {
  const more = p.total > p.first_ids.length ? ', …' : '';
  return `${p.total} workflow${p.total === 1 ? '' : 's'} match: ${p.first_ids.join(', ')}${more}`;
}
