import { pathTo } from '../../api/route-table.js';
import type { AuditRecord } from '../../runtime/wire/index.js';
import { get, type Live } from './api.js';
import { clear, h, time } from './dom.js';

const PAGE = 100;

/**
 * The audit trail (braid audit): every operator action newest first, who (with role and address), what, to
 * what and why; filtered by actor, action (a prefix with .*) and target, paged back by "Older".
 */
export function auditPage(app: HTMLElement, params: URLSearchParams): Live {
  const filter = { actor: params.get('actor') || undefined, action: params.get('action') || undefined, target: params.get('target') || undefined };
  const input = (name: keyof typeof filter, placeholder: string) =>
    h('input', { name, placeholder, value: filter[name] ?? '', 'data-testid': `audit-${name}` });
  const form = h(
    'form',
    { class: 'filters', method: 'get', action: '/audit' },
    input('actor', 'actor'),
    input('action', 'action (workflow.* for a prefix)'),
    input('target', 'target or workflow id'),
    h('button', { type: 'submit' }, 'Search'),
  );
  const rows = h('tbody', {});
  const older = h('button', { type: 'button', hidden: true, 'data-testid': 'audit-older' }, 'Older');
  const table = h(
    'table',
    { class: 'list', 'data-testid': 'audit' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['When', 'Who', 'Action', 'Target', 'Reason', 'From'].map((c) => h('th', {}, c)),
      ),
    ),
    rows,
  );
  clear(app);
  app.append(h('h2', {}, 'Audit'), form, table, older);
  const load = async (before?: string) => {
    try {
      const { lines } = await get<{ lines: AuditRecord[] }>(pathTo('audit', {}, { ...filter, before, limit: PAGE }));
      if (lines.length === 0 && before === undefined) rows.append(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No audit lines.')));
      for (const a of lines) rows.append(line(a));
      older.hidden = lines.length < PAGE;
      older.onclick = () => void load(lines[lines.length - 1]?.id);
    } catch (error) {
      rows.replaceChildren(h('tr', {}, h('td', { colspan: 6, class: 'error' }, (error as Error).message)));
    }
  };
  void load();
  return { close: () => undefined };
}

function line(a: AuditRecord): HTMLElement {
  const target = a.workflow_id
    ? h('a', { href: `/workflows/${encodeURIComponent(a.workflow_id)}`, 'data-link': true, class: 'mono' }, a.task ? `${a.workflow_id} ${a.task}` : a.target)
    : h('span', { class: 'mono' }, a.target);
  return h(
    'tr',
    { 'data-action': a.action },
    h('td', {}, time(String(a.at))),
    h('td', {}, a.actor, a.role ? h('span', { class: 'muted' }, ` (${a.role})`) : null),
    h('td', { class: 'mono' }, a.action),
    h('td', {}, target),
    h('td', {}, a.reason ?? ''),
    h('td', { class: 'muted' }, a.source ?? ''),
  );
}
