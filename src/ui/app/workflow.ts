import { pathTo, roleFor } from '../../api/route-table.js';
import { attemptHistory, auditText, humanDuration } from '../../runtime/wire/index.js';
import { type Live, live, post } from './api.js';
import { type DagEdge, type DagNode, DagView } from './dag.js';
import { confirmAction, toast } from './dialog.js';
import { badge, clear, duration, h, json, time } from './dom.js';
import { startedByEvent } from './events.js';
import { TaskPanel } from './panel.js';
import type { Task, WorkflowStatus } from './types.js';

const FAILED = new Set(['discarded', 'cancelled']);
/** Every task state, in the order a task meets them, for the graph's legend. */
const TASK_STATES = ['pending', 'scheduled', 'available', 'running', 'retryable', 'completed', 'skipped', 'cancelled', 'discarded'];

/** One workflow: its DAG (live), its actions, and the task panel for ?selected=. */
export function workflowPage(app: HTMLElement, id: string, params: URLSearchParams): Live {
  let status: WorkflowStatus | undefined;
  let selected = params.get('selected') ?? undefined;
  const header = h('div', { class: 'wf-header' });
  const dag = new DagView((name) => select(name));
  const graph = h(
    'div',
    { class: 'graph' },
    h(
      'div',
      { class: 'graph-tools' },
      h('button', { type: 'button', onclick: () => dag.fit(), 'data-testid': 'fit' }, 'Fit'),
      h('button', { type: 'button', onclick: () => dag.zoom(1.25) }, '+'),
      h('button', { type: 'button', onclick: () => dag.zoom(0.8) }, '−'),
    ),
    dag.element,
    h('div', { class: 'legend', 'data-testid': 'legend' }, ...TASK_STATES.map(badge)),
  );
  const side = h('aside', { class: 'side', 'data-testid': 'task-panel', hidden: true });
  const panel = new TaskPanel(side, id, () => select(undefined));
  const details = h('details', { class: 'io' });
  const timeline = h('details', { class: 'wf-timeline', 'data-testid': 'workflow-timeline' });
  const operated = h('details', { class: 'wf-history', 'data-testid': 'workflow-history' });
  clear(app);
  app.append(header, startedByEvent(id), h('div', { class: 'wf-body' }, graph, side), timeline, operated, details);

  function select(name: string | undefined): void {
    selected = name;
    const q = new URLSearchParams(location.search);
    if (name) q.set('selected', name);
    else q.delete('selected');
    history.replaceState(null, '', `${location.pathname}${q.size ? `?${q}` : ''}`);
    dag.select(name);
    if (status) panel.show(status, name);
  }

  function show(s: WorkflowStatus): void {
    status = s;
    renderHeader(header, s);
    const byName = new Map(s.tasks.map((t) => [t.name, t]));
    const nodes: DagNode[] = s.tasks.map((t) => ({
      id: t.name,
      title: t.name,
      subtitle: t.removed_in ? `${t.kind} · removed in ${t.removed_in.slice(0, 12)}` : `${t.kind} · ${taskDuration(t)}`,
      state: t.state,
      wait: waitNote(t),
    }));
    const edges: DagEdge[] = s.tasks.flatMap((t) =>
      t.deps.filter((d) => byName.has(d)).map((d) => ({ from: d, to: t.name, kind: edgeKind(byName.get(d)!.state) })),
    );
    // the panel first: whether it shows decides the graph's width, which the first fit uses
    panel.show(s, selected);
    dag.render(s.workflow.definition_hash, nodes, edges);
    dag.select(selected);
    renderTimeline(timeline, s);
    renderHistory(operated, s);
    clear(details);
    details.append(
      h('summary', {}, 'Inputs and output'),
      h('h4', {}, 'Inputs'),
      json(s.workflow.inputs),
      h('h4', {}, 'Output'),
      s.workflow.output_error ? h('p', { class: 'error' }, s.workflow.output_error) : json(s.workflow.output),
    );
  }

  const stream = live<WorkflowStatus>(pathTo('workflowEvents', { id }), pathTo('status', { id }), show);
  return {
    close() {
      stream.close();
      panel.close();
    },
  };
}

/** The workflow's name, state, facts and actions (cancel while it runs, retry once it ended). */
function renderHeader(header: HTMLElement, s: WorkflowStatus): void {
  const w = s.workflow;
  clear(header);
  const running = w.state === 'running';
  const mode = h(
    'select',
    { 'data-testid': 'retry-mode' },
    // what failed and what it held back unless asked: `all` re-runs completed tasks' side effects
    h('option', { value: 'failed_and_downstream' }, 'failed and downstream'),
    h('option', { value: 'failed_only' }, 'failed only'),
    h('option', { value: 'all' }, 'all (completed tasks too)'),
  );
  const reset = h('input', { type: 'checkbox', 'data-testid': 'retry-reset' });
  header.append(
    h('h1', {}, w.name, ' ', badge(w.state), ...(w.end_reason ? [' ', h('span', { class: 'reason', 'data-testid': 'end-reason' }, w.end_reason)] : [])),
    facts(s),
    h(
      'div',
      { class: 'actions', 'data-needs': roleFor('cancel') },
      running && h('button', { type: 'button', class: 'danger', 'data-testid': 'cancel', onclick: () => void cancel(w.id) }, 'Cancel workflow'),
      !running &&
        h(
          'span',
          { class: 'retry' },
          'Retry: ',
          mode,
          h('label', {}, reset, ' reset history'),
          h('button', { type: 'button', 'data-testid': 'retry', onclick: () => void retry(s, mode.value, reset.checked) }, 'Retry'),
        ),
    ),
  );
}

async function cancel(id: string): Promise<void> {
  if (!(await confirmAction('Cancel this workflow?', 'Tasks not yet running are cancelled; running handlers are asked to stop.', 'Cancel workflow'))) return;
  try {
    const r = await post<{ cancelled: string[]; stopping: string[] }>(pathTo('cancel', { id }));
    toast(`Cancelled ${r.cancelled.length} task(s)${r.stopping.length ? `; ${r.stopping.length} running task(s) asked to stop` : ''}.`);
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}

async function retry(s: WorkflowStatus, mode: string, resetHistory: boolean): Promise<void> {
  const id = s.workflow.id;
  const done = s.tasks.filter((t) => t.state === 'completed').length;
  const rerun = mode === 'all' && done > 0 ? ` ${done} completed task(s) run again, side effects included (a charge, a refund, an email, a link sent).` : '';
  const title = mode === 'all' && s.workflow.state === 'completed' ? 'Run this completed workflow again?' : 'Retry this workflow?';
  if (!(await confirmAction(title, `Mode: ${mode}${resetHistory ? ', with the error history reset' : ''}.${rerun}`, 'Retry'))) return;
  try {
    const r = await post<{ retried: string[]; attempt: number }>(pathTo('retry', { id }), { mode, reset_history: resetHistory });
    toast(`Retrying ${r.retried?.length ?? 0} task(s) as attempt ${r.attempt}.`);
  } catch (error) {
    toast((error as Error).message, 'error');
  }
}

/** What the workflow is: its id, parent, children, version, upgrades, times and attempt. */
function facts(s: WorkflowStatus): HTMLElement {
  const w = s.workflow;
  return h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'Id'),
    h('dd', { class: 'mono' }, w.id),
    ...(w.parent_id
      ? [
          h('dt', {}, 'Parent'),
          h(
            'dd',
            {},
            h('a', { href: `/workflows/${encodeURIComponent(w.parent_id)}`, 'data-link': true, class: 'mono', 'data-testid': 'parent-link' }, w.parent_id),
          ),
        ]
      : []),
    ...(s.tasks.some((t) => t.start)
      ? [
          h('dt', {}, 'Children'),
          h('dd', {}, h('a', { href: `/?parent_id=${encodeURIComponent(w.id)}`, 'data-link': true, 'data-testid': 'children-link' }, 'list them')),
        ]
      : []),
    h('dt', {}, 'Version'),
    h(
      'dd',
      {},
      h(
        'a',
        { href: `/definitions?name=${encodeURIComponent(w.name)}&hash=${w.definition_hash}`, 'data-link': true, class: 'mono' },
        w.definition_hash.slice(0, 12),
      ),
    ),
    ...(s.upgrades ?? []).flatMap((u) => [
      h('dt', {}, 'Upgraded'),
      h('dd', { 'data-testid': 'upgrade' }, h('span', { class: 'mono' }, `${u.from.slice(0, 12)} → ${u.to.slice(0, 12)}`), ` ${time(u.at)}`),
    ]),
    h('dt', {}, 'Created'),
    h('dd', {}, time(w.created_at)),
    h('dt', {}, 'Duration'),
    h('dd', {}, duration(w.created_at, w.finalized_at)),
    h('dt', {}, 'Attempt'),
    h('dd', {}, w.attempt),
  );
}

/**
 * Every attempt of every task on one time axis, from the workflow's creation to its end (or now): a bar per
 * attempt, placed and sized by its start and duration, coloured by its outcome, titled with its worker.
 */
function renderTimeline(root: HTMLElement, s: WorkflowStatus): void {
  const open = (root as HTMLDetailsElement).open;
  clear(root);
  const rows = s.tasks.flatMap((t) => attemptHistory(t).map((a) => ({ task: t.name, a })));
  root.append(h('summary', {}, `Timeline (${rows.length} attempt${rows.length === 1 ? '' : 's'})`));
  (root as HTMLDetailsElement).open = open;
  if (rows.length === 0) return;
  const from = new Date(s.workflow.created_at).getTime();
  const to = Math.max(
    s.workflow.finalized_at ? new Date(s.workflow.finalized_at).getTime() : Date.now(),
    ...rows.map(({ a }) => (a.ended_at ? new Date(a.ended_at).getTime() : Date.now())),
  );
  const span = Math.max(1, to - from);
  const pct = (t: number) => `${(((t - from) / span) * 100).toFixed(2)}%`;
  root.append(
    h('p', { class: 'muted' }, `${time(s.workflow.created_at)} → ${s.workflow.finalized_at ? time(s.workflow.finalized_at) : 'now'} (${humanDuration(span)})`),
    h(
      'ol',
      { class: 'timeline-rows' },
      rows.map(({ task, a }) => {
        const start = a.started_at ? new Date(a.started_at).getTime() : from;
        const end = a.ended_at ? new Date(a.ended_at).getTime() : Date.now();
        const bar = h('span', {
          class: `timeline-bar state-${a.outcome}`,
          title:
            `${task} attempt ${a.attempt}: ${a.outcome}${a.message ? ` (${a.message})` : ''}, ${humanDuration(end - start)}` +
            (a.worker ? ` on ${a.worker}` : ''),
        });
        // placed through the CSSOM: the page's content security policy allows no inline style attribute
        bar.style.left = pct(start);
        bar.style.width = `max(2px, ${(((end - start) / span) * 100).toFixed(2)}%)`;
        return h(
          'li',
          { 'data-task': task, 'data-attempt': a.attempt, 'data-outcome': a.outcome },
          h('span', { class: 'timeline-label mono' }, `${task}#${a.attempt}`),
          h('span', { class: 'timeline-track' }, bar),
          h('span', { class: 'timeline-note' }, `${humanDuration(end - start)} · ${a.outcome}${a.worker ? ` · ${a.worker}` : ''}`),
        );
      }),
    ),
  );
}

function edgeKind(depState: string): string {
  if (depState === 'completed') return 'done';
  if (FAILED.has(depState)) return 'failed';
  if (depState === 'skipped') return 'skipped';
  return 'blocked';
}

function taskDuration(t: Task): string {
  if (!t.started_at) return t.state;
  return duration(t.started_at, t.finalized_at);
}

function waitNote(t: Task): string | null {
  if (!t.wait) return null;
  return `wait: ${t.wait.phase === 'pending_deps' ? 'after its deps' : t.wait.phase}`;
}

/** What operators did to the workflow (its audit lines: "workflow.cancel by ada: \"duplicate order\""), oldest first. */
function renderHistory(el: HTMLDetailsElement, s: WorkflowStatus): void {
  const lines = s.audit ?? [];
  el.hidden = lines.length === 0;
  el.replaceChildren(
    h('summary', {}, `History (${lines.length})`),
    h(
      'ul',
      { class: 'history' },
      lines.map((a) => h('li', { class: 'mono', 'data-action': a.action }, auditText(a))),
    ),
  );
}
