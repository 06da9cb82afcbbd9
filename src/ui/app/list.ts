import { pathTo } from '../../api/route-table.js';
import { WORKFLOW_STATES } from '../../runtime/wire/index.js';
import { type Live, live } from './api.js';
import { bulkBar } from './bulk.js';
import { badge, clear, duration, h, time } from './dom.js';
import type { WorkflowPage, WorkflowSummary } from './types.js';

const PAGE = 25;

/** The workflow list: filters, cursor paging, live first page. */
export function listPage(app: HTMLElement, params: URLSearchParams): Live {
  const get = (key: string) => params.get(key) ?? '';
  const cursor = get('cursor');
  // the top level only unless asked otherwise (children are listed from their parent)
  const topLevel = params.get('top_level') !== 'false' && !params.get('parent_id');
  /** The search as the page's own query (kept in the address bar, so it can be shared) and as the API's. */
  const search = (): URLSearchParams => {
    const q = new URLSearchParams();
    for (const key of ['state', 'name', 'id_prefix', 'error', 'created_after', 'created_before', 'parent_id']) if (get(key)) q.set(key, get(key));
    for (const i of params.getAll('input')) q.append('input', i);
    if (!topLevel && !get('parent_id')) q.set('top_level', 'false');
    return q;
  };
  const query = (extra: Record<string, string>) => {
    const q = search();
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    return q.toString();
  };
  const apiQuery = (extra: Record<string, string>) => {
    const q = new URLSearchParams(query(extra));
    if (topLevel) q.set('top_level', 'true');
    else q.delete('top_level');
    return q.toString();
  };
  const body = h('tbody');
  const pager = h('div', { class: 'pager' });
  const filters = filterForm(params, topLevel);
  clear(app);
  app.append(
    h('h1', {}, 'Workflows'),
    filters,
    search().size > 0 ? bulkBar(new URLSearchParams(apiQuery({}))) : '',
    h(
      'table',
      { class: 'list', 'data-testid': 'workflow-list' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Workflow', 'Name', 'Version', 'State', 'Tasks', 'Parent', 'Created', 'Duration'].map((t) => h('th', {}, t)),
        ),
      ),
      body,
    ),
    pager,
  );
  const show = (page: WorkflowPage) => {
    clear(body);
    if (page.workflows.length === 0)
      body.append(
        h(
          'tr',
          {},
          h('td', { colspan: 8, class: 'empty' }, search().size > 0 ? 'No workflow matches.' : 'No workflows yet. Start one with `braid start NAME`.'),
        ),
      );
    for (const w of page.workflows) body.append(row(w));
    clear(pager);
    if (cursor) pager.append(h('a', { href: `/?${query({})}`, 'data-link': true }, '← Newest'));
    if (page.next_cursor) pager.append(h('a', { href: `/?${query({ cursor: page.next_cursor })}`, 'data-link': true, 'data-testid': 'next-page' }, 'Older →'));
  };
  const pagePath = pathTo('workflows', {}, new URLSearchParams(apiQuery({ limit: String(PAGE), ...(cursor ? { cursor } : {}) })));
  // the first page follows changes live; older pages are read when opened
  return live<WorkflowPage>(cursor ? pagePath : pathTo('events', {}, new URLSearchParams(apiQuery({ limit: String(PAGE) }))), pagePath, show);
}

/** The filters, as the page's query has them; searching pushes a new address. */
function filterForm(params: URLSearchParams, topLevel: boolean): HTMLFormElement {
  const get = (key: string) => params.get(key) ?? '';
  const state = get('state');
  const filters = h(
    'form',
    { class: 'filters', onsubmit: (e: Event) => applyFilters(filters, e) },
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
    h('label', {}, 'Name ', h('input', { name: 'name', value: get('name'), placeholder: 'workflow name', 'data-testid': 'filter-name' })),
    h(
      'label',
      {},
      'Id ',
      h('input', { name: 'id_prefix', value: get('id_prefix') ? `${get('id_prefix')}*` : '', placeholder: 'refund:r1*', 'data-testid': 'filter-id' }),
    ),
    h(
      'label',
      {},
      'Inputs ',
      h('input', {
        name: 'input',
        value: params
          .getAll('input')
          .map((i) => `inputs.${i.replace('=', ' = ')}`)
          .join(', '),
        placeholder: 'inputs.customer_id = c1',
        'data-testid': 'filter-input',
      }),
    ),
    h('label', {}, 'Error ', h('input', { name: 'error', value: get('error'), placeholder: 'error text', 'data-testid': 'filter-error' })),
    h('label', {}, 'Created after ', h('input', { name: 'created_after', type: 'date', value: get('created_after').slice(0, 10) })),
    h('label', {}, 'before ', h('input', { name: 'created_before', type: 'date', value: get('created_before').slice(0, 10) })),
    h('label', {}, h('input', { name: 'top_level', type: 'checkbox', checked: topLevel, 'data-testid': 'filter-top-level' }), ' top level only'),
    h('button', { type: 'submit', 'data-testid': 'filter-apply' }, 'Search'),
    get('parent_id') ? h('span', { class: 'muted' }, ` children of ${get('parent_id')}`) : null,
  );
  return filters;
}

/** The form's filters as the page's query (one input filter per comma-separated term), opened as a new address. */
function applyFilters(filters: HTMLFormElement, e: Event): void {
  e.preventDefault();
  const data = new FormData(filters);
  const q = new URLSearchParams();
  for (const key of ['state', 'name', 'error', 'created_after', 'created_before']) if (data.get(key)) q.set(key, String(data.get(key)));
  const id = String(data.get('id_prefix') ?? '')
    .trim()
    .replace(/\*$/, '');
  if (id) q.set('id_prefix', id);
  // `inputs.customer_id = c1, inputs.tier = gold`: one filter per comma-separated term
  for (const term of String(data.get('input') ?? '').split(',')) {
    const m = /^\s*(?:inputs\.)?([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$/.exec(term);
    if (m) q.append('input', `${m[1]}=${m[2]}`);
  }
  if (!data.get('top_level')) q.set('top_level', 'false');
  history.pushState(null, '', `/${q.size ? `?${q}` : ''}`);
  window.dispatchEvent(new PopStateEvent('popstate'));
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
    h(
      'td',
      { 'data-testid': 'parent' },
      w.parent_id ? h('a', { href: `/workflows/${encodeURIComponent(w.parent_id)}`, 'data-link': true, class: 'mono' }, w.parent_id) : '',
    ),
    h('td', {}, time(w.created_at)),
    h('td', {}, duration(w.created_at, w.finalized_at)),
  );
}
