import { WORKFLOW_STATES } from '../../runtime/wire.js';
import { type Live, live } from './api.js';
import { badge, clear, duration, h, time } from './dom.js';
import type { WorkflowPage, WorkflowSummary } from './types.js';

const PAGE = 25;

/** The workflow list: filters, cursor paging, live first page. */
export function listPage(app: HTMLElement, params: URLSearchParams): Live {
  const state = params.get('state') ?? '';
  const name = params.get('name') ?? '';
  const cursor = params.get('cursor') ?? '';
  const query = (extra: Record<string, string>) => {
    const q = new URLSearchParams({ ...(state ? { state } : {}), ...(name ? { name } : {}), ...extra });
    return q.toString();
  };
  const body = h('tbody');
  const pager = h('div', { class: 'pager' });
  const filters = h(
    'form',
    { class: 'filters', onsubmit: (e: Event) => applyFilters(e) },
    h(
      'label',
      {},
      'State ',
      h(
        'select',
        { name: 'state', 'data-testid': 'filter-state' },
        h('option', { value: '' }, 'any'),
        WORKFLOW_STATES.map((s) => h('option', { value: s, selected: s === state }, s)),
      ),
    ),
    h('label', {}, 'Name ', h('input', { name: 'name', value: name, placeholder: 'workflow name', 'data-testid': 'filter-name' })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  function applyFilters(e: Event): void {
    e.preventDefault();
    const data = new FormData(filters);
    const q = new URLSearchParams();
    for (const key of ['state', 'name']) if (data.get(key)) q.set(key, String(data.get(key)));
    history.pushState(null, '', `/${q.size ? `?${q}` : ''}`);
    window.dispatchEvent(new PopStateEvent('popstate'));
  }
  clear(app);
  app.append(
    h('h1', {}, 'Workflows'),
    filters,
    h(
      'table',
      { class: 'list', 'data-testid': 'workflow-list' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Workflow', 'Name', 'Version', 'State', 'Tasks', 'Created', 'Duration'].map((t) => h('th', {}, t)),
        ),
      ),
      body,
    ),
    pager,
  );
  const show = (page: WorkflowPage) => {
    clear(body);
    if (page.workflows.length === 0) body.append(h('tr', {}, h('td', { colspan: 7, class: 'empty' }, 'No workflows yet. Start one with `braid start NAME`.')));
    for (const w of page.workflows) body.append(row(w));
    clear(pager);
    if (cursor) pager.append(h('a', { href: `/?${query({})}`, 'data-link': true }, '← Newest'));
    if (page.next_cursor) pager.append(h('a', { href: `/?${query({ cursor: page.next_cursor })}`, 'data-link': true, 'data-testid': 'next-page' }, 'Older →'));
  };
  const pagePath = `/api/workflows?${query({ limit: String(PAGE), ...(cursor ? { cursor } : {}) })}`;
  // the first page follows changes live; older pages are read when opened
  return live<WorkflowPage>(cursor ? pagePath : `/api/events?${query({ limit: String(PAGE) })}`, pagePath, show);
}

function row(w: WorkflowSummary): HTMLElement {
  const counts = Object.entries(w.task_counts)
    .sort()
    .map(([s, n]) => h('span', { class: `count state-${s}`, title: s }, `${n} ${s}`));
  return h(
    'tr',
    { 'data-workflow': w.id, 'data-state': w.state },
    h('td', {}, h('a', { href: `/workflows/${encodeURIComponent(w.id)}`, 'data-link': true, class: 'mono' }, w.id)),
    h('td', {}, w.name),
    h('td', { class: 'mono', title: w.definition_hash }, w.definition_hash.slice(0, 12)),
    h('td', {}, badge(w.state)),
    h('td', { class: 'counts' }, counts),
    h('td', {}, time(w.created_at)),
    h('td', {}, duration(w.created_at, w.finalized_at)),
  );
}
