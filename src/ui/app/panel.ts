import { pathTo, roleFor } from '../../api/route-table.js';
import { attemptHistory, attemptText, humanDuration, signalCountText } from '../../runtime/wire/index.js';
import { get, post } from './api.js';
import { callbackLinks, sendableKeys } from './callback-links.js';
import { confirmAction, toast } from './dialog.js';
import { badge, clear, duration, h, json, time } from './dom.js';
import { StreamsView } from './streams.js';
import { taskActions } from './task-actions.js';
import type { Diagnostics, LogPage, PlanTerm, SignalPage, Task, TermValue, WorkflowStatus } from './types.js';

/**
 * The selected task: args, output, errors by attempt, its timeline, and for a task with a wait the
 * inspector (expression, terms with their CEL, counts and timer times, live diagnostics), its signal
 * history, and a form to emit a signal.
 */
export class TaskPanel {
  private shown?: string;
  private refresh?: number;
  private lastRefresh = 0;
  private readonly live = h('div', { class: 'wait-live' });
  private readonly history = h('div', { class: 'signals' });
  private readonly logs = h('div', { class: 'logs', 'data-testid': 'task-logs' });
  /** While the shown task runs, its log is read again every LOG_POLL_MS (its lines are stored each second). */
  private logTimer?: number;
  /** The shown task's output streams, followed live (kept while the same task stays shown). */
  private streams?: StreamsView;

  constructor(
    private readonly root: HTMLElement,
    private readonly workflowId: string,
    private readonly onClose: () => void,
  ) {}

  show(status: WorkflowStatus, name: string | undefined): void {
    const task = name ? status.tasks.find((t) => t.name === name) : undefined;
    this.root.hidden = !task;
    if (!task) {
      this.shown = undefined;
      this.close();
      return;
    }
    const first = this.shown !== task.name;
    this.shown = task.name;
    if (first) {
      this.streams?.dispose();
      this.streams = new StreamsView(this.workflowId, task.name);
    }
    this.streams!.taskState(task.state);
    clear(this.root);
    this.root.append(
      h(
        'div',
        { class: 'panel' },
        h(
          'div',
          { class: 'panel-head' },
          h('h2', {}, task.name, ' ', badge(task.state)),
          h('button', { type: 'button', class: 'close', 'aria-label': 'close', onclick: () => this.onClose() }, '×'),
        ),
        h('p', { class: 'muted' }, `${task.kind} · queue ${task.queue} · attempt ${attemptText(task.attempt, task.max_attempts)}`),
        task.removed_in ? null : taskActions(this.workflowId, task),
        task.removed_in &&
          h('p', { class: 'reason', 'data-testid': 'removed-in' }, `removed in ${task.removed_in.slice(0, 12)}: kept as history by an upgrade`),
        task.pending_reason && h('p', { class: 'reason', 'data-testid': 'pending-reason' }, task.pending_reason),
        task.skip_reason && h('p', { class: 'reason', 'data-testid': 'skip-reason' }, task.skip_reason),
        task.when &&
          h(
            'p',
            { class: 'muted', 'data-testid': 'when' },
            'when: ',
            h('code', {}, task.when),
            task.when_met === null ? '' : ` (${task.when_met ? 'true' : 'false'})`,
          ),
        timeline(task),
        attempts(task),
        task.wait && this.inspector(task),
        h('h3', {}, 'Log'),
        this.logs,
        this.streams!.el,
        h('h3', {}, 'Args'),
        json(task.args),
        h('h3', {}, 'Output'),
        childLinks(task),
        json(task.output),
        h('h3', {}, 'Errors'),
        task.errors.length === 0
          ? h('p', { class: 'muted' }, 'none')
          : h(
              'ol',
              { class: 'errors' },
              task.errors.map((e) =>
                h(
                  'li',
                  {},
                  h('strong', {}, `attempt ${e.attempt}`),
                  ` ${time(e.at)} `,
                  e.kind ? h('span', { class: 'muted' }, `(${e.code ?? e.kind}) `) : null,
                  e.message,
                  e.not_retried ? h('p', { class: 'muted', 'data-testid': 'not-retried' }, `not retried: ${e.not_retried}`) : null,
                  e.stack ? h('details', {}, h('summary', {}, 'stack'), h('pre', {}, e.stack)) : null,
                ),
              ),
            ),
      ),
    );
    if (first) this.logs.replaceChildren(h('p', { class: 'muted' }, 'loading'));
    void this.loadLogs(task.name);
    window.clearInterval(this.logTimer);
    this.logTimer = task.state === 'running' ? window.setInterval(() => void this.loadLogs(task.name), LOG_POLL_MS) : undefined;
    // diagnostics and signal history are reads of their own: at most one refresh a second while changes stream in
    if (task.wait && (first || Date.now() - this.lastRefresh > 1000)) this.loadLive(task);
    else if (task.wait && !this.refresh) this.refresh = window.setTimeout(() => this.loadLive(task), 1000);
  }

  private inspector(task: Task): HTMLElement {
    const w = task.wait!;
    const values = new Map((w.evidence?.terms ?? w.last_evaluation?.terms ?? []).map((t) => [t.name, t]));
    const key = h(
      'select',
      { 'data-testid': 'signal-key' },
      sendableKeys(w.signals).map((k) => h('option', { value: k }, k)),
    );
    const payload = h('textarea', { rows: 3, 'data-testid': 'signal-payload', placeholder: '{"approved": true}' });
    return h(
      'section',
      { class: 'inspector', 'data-testid': 'wait-inspector' },
      h('h3', {}, 'Wait ', h('span', { class: `phase phase-${w.phase}`, 'data-testid': 'wait-phase' }, w.phase)),
      h('code', { class: 'cel', 'data-testid': 'wait-expr' }, w.expr),
      h(
        'table',
        { class: 'terms' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Term', 'Kind', 'CEL / source', 'Value'].map((c) => h('th', {}, c)),
          ),
        ),
        h(
          'tbody',
          {},
          w.terms.map((t) => termRow(t, values.get(t.name))),
        ),
      ),
      w.last_evaluation?.error && h('p', { class: 'error' }, `expression error: ${w.last_evaluation.error}`),
      this.live,
      callbackLinks(this.workflowId, task),
      sendableKeys(w.signals).length > 0 &&
        h(
          'form',
          { class: 'emit', 'data-testid': 'emit-form', 'data-needs': roleFor('emit'), onsubmit: (e: Event) => void this.emit(e, key.value, payload.value) },
          h('h4', {}, 'Emit a signal'),
          h('label', {}, 'Key ', key),
          h('label', {}, 'Payload (JSON) ', payload),
          h('button', { type: 'submit', 'data-testid': 'emit' }, 'Emit'),
        ),
      h('h4', {}, 'Signal history'),
      this.history,
    );
  }

  private async emit(e: Event, key: string, text: string): Promise<void> {
    e.preventDefault();
    let payload: unknown = null;
    if (text.trim()) {
      try {
        payload = JSON.parse(text);
      } catch {
        toast('The payload is not JSON.', 'error');
        return;
      }
    }
    if (!(await confirmAction(`Emit "${key}"?`, h('pre', {}, JSON.stringify(payload, null, 2)), 'Emit'))) return;
    try {
      const r = await post<{ signal: { id: string }; replayed: boolean }>(pathTo('emit', { id: this.workflowId }), {
        key,
        payload,
        source: { via: 'braid ui' },
      });
      toast(`Signal ${r.signal.id} emitted.`);
    } catch (error) {
      toast((error as Error).message, 'error');
    }
  }

  private loadLive(task: Task): void {
    clearTimeout(this.refresh);
    this.refresh = undefined;
    this.lastRefresh = Date.now();
    const at = { id: this.workflowId, task: task.name };
    void get<Diagnostics>(pathTo('diagnostics', at))
      .then((d) => {
        if (this.shown !== task.name) return;
        clear(this.live);
        this.live.append(
          h(
            'div',
            {},
            h('h4', {}, 'Live diagnostics'),
            h(
              'p',
              { 'data-testid': 'diagnostics' },
              `expression is ${d.expr_result} now · ${d.signals_scanned} signal(s) ` +
                `scanned${d.truncated ? ` (truncated at ${d.signal_scan_limit})` : ''} · ${time(d.evaluated_at)}`,
            ),
            d.eval_error && h('p', { class: 'error' }, d.eval_error),
            d.terms.filter((t) => t.error).map((t) => h('p', { class: 'error' }, `${t.name}: ${t.error}`)),
          ),
        );
      })
      .catch((error: Error) => this.live.replaceChildren(h('p', { class: 'error' }, error.message)));
    void this.loadSignals(at, undefined, true);
  }

  private async loadSignals(at: { id: string; task: string }, cursor: string | undefined, fresh: boolean): Promise<void> {
    try {
      const page = await get<SignalPage>(pathTo('taskSignals', at, { limit: 50, cursor_id: cursor }));
      if (fresh) clear(this.history);
      this.history.querySelector('.more')?.remove();
      if (page.signals.length === 0 && fresh) this.history.append(h('p', { class: 'muted' }, 'none yet'));
      const list = this.history.querySelector('ol') ?? this.history.appendChild(h('ol', { 'data-testid': 'signal-history' }));
      for (const s of page.signals)
        list.append(h('li', {}, h('span', { class: 'mono' }, `#${s.id}`), ` ${s.key} `, h('code', {}, JSON.stringify(s.payload)), ` ${time(s.created_at)}`));
      if (page.has_more)
        this.history.append(
          h('button', { type: 'button', class: 'more', onclick: () => void this.loadSignals(at, page.next_cursor_id ?? undefined, false) }, 'More'),
        );
    } catch (error) {
      this.history.replaceChildren(h('p', { class: 'error' }, (error as Error).message));
    }
  }

  /** The task's log lines (the latest 1,000), braid's own marked. */
  private async loadLogs(name: string): Promise<void> {
    try {
      const page = await get<LogPage>(pathTo('logs', { id: this.workflowId }, { task: name, limit: 1000 }));
      if (this.shown !== name) return;
      if (page.lines.length === 0) {
        this.logs.replaceChildren(h('p', { class: 'muted' }, 'no lines: its handler wrote none with ctx.log'));
        return;
      }
      this.logs.replaceChildren(
        h(
          'ol',
          { class: 'log-lines' },
          page.lines.map((l) =>
            h(
              'li',
              { class: `log-${l.level}${l.source === 'braid' ? ' log-braid' : ''}`, 'data-source': l.source },
              h('time', {}, time(l.at)),
              ` #${l.attempt} `,
              h('span', { class: 'level' }, l.level),
              ' ',
              l.source === 'braid' ? h('span', { class: 'muted' }, '[braid] ') : null,
              l.message,
              l.fields ? h('code', {}, ` ${JSON.stringify(l.fields)}`) : null,
            ),
          ),
        ),
        page.has_more ? h('p', { class: 'muted' }, 'more lines: braid logs ID TASK shows them all') : '',
      );
    } catch (error) {
      if (this.shown === name) this.logs.replaceChildren(h('p', { class: 'error' }, (error as Error).message));
    }
  }

  close(): void {
    this.streams?.dispose();
    this.streams = undefined;
    clearTimeout(this.refresh);
    window.clearInterval(this.logTimer);
    this.logTimer = undefined;
  }
}

const LOG_POLL_MS = 1500;

function termRow(term: PlanTerm, value: TermValue | undefined): HTMLElement {
  const source =
    term.kind === 'signal'
      ? `${term.callback ? `callback links (${term.callback.recipients?.length ?? 1})` : `signal ${term.signal}`}` +
        `${term.where ? ` where ${term.where}` : ''}${term.count && term.count > 1 ? ` × ${term.count}` : ''}` +
        `${term.distinct ? ` distinct by ${term.distinct}` : ''}`
      : term.kind === 'expr'
        ? (term.expr ?? '')
        : term.kind === 'timer'
          ? timerText(term)
          : `workflows (${term.workflows?.mode}${term.workflows?.quorum ? ` ${term.workflows.quorum}` : ''})`;
  let shown = value ? String(value.value) : '—';
  if (value?.kind === 'signal') shown = signalCountText({ required: term.kind === 'signal' ? term.count : 1, ...value });
  if (value?.kind === 'timer') shown = value.fired ? `fired (${time(value.fire_at)})` : value.fire_at ? `fires ${time(value.fire_at)}` : 'not scheduled';
  if (value?.kind === 'workflows') shown = `${value.completed ?? 0}/${value.required ?? 0} completed${value.failed ? `, ${value.failed} failed` : ''}`;
  return h(
    'tr',
    { 'data-term': term.name, class: value?.value ? 'true' : '' },
    h('td', {}, h('strong', {}, term.name), term.label ? h('div', { class: 'muted' }, term.label) : null),
    h('td', {}, term.kind === 'signal' && term.callback ? 'callback' : term.kind),
    h('td', {}, h('code', { class: 'cel' }, source)),
    h('td', { 'data-testid': `term-${term.name}` }, shown, value?.error ? h('div', { class: 'error' }, value.error) : null),
  );
}

function timerText(term: Extract<PlanTerm, { kind: 'timer' }>): string {
  const t = term.timer;
  if (t.anchor === 'at') return `at ${t.at}`;
  const after = humanDuration(t.after_ms ?? 0);
  return t.anchor === 'task_finalized' ? `${after} after ${t.task} finalized` : `${after} after ${t.anchor.replace('_', ' ')}`;
}

/** A start task's children (its output's workflow_ids), each a link to its page. */
function childLinks(task: Task): HTMLElement | null {
  const ids = (task.output as { workflow_ids?: unknown } | null)?.workflow_ids;
  if (!task.start || !Array.isArray(ids) || ids.length === 0) return null;
  return h(
    'ol',
    { class: 'children', 'data-testid': 'child-links' },
    ids.map((id) => h('li', {}, h('a', { href: `/workflows/${encodeURIComponent(String(id))}`, 'data-link': true, class: 'mono' }, String(id)))),
  );
}

/** Every attempt: when it started, how long it took, the worker that ran it and how it ended. */
function attempts(task: Task): HTMLElement | null {
  const spans = attemptHistory(task);
  if (spans.length === 0) return null;
  return h(
    'section',
    {},
    h('h3', {}, 'Attempts'),
    h(
      'ol',
      { class: 'attempts', 'data-testid': 'attempts' },
      spans.map((a) =>
        h(
          'li',
          { 'data-outcome': a.outcome },
          h('strong', {}, `#${a.attempt}`),
          ` ${time(a.started_at)} · ${a.ended_at ? duration(a.started_at, a.ended_at) : `running ${duration(a.started_at, null)}`}`,
          a.worker ? ` · ${a.worker}` : '',
          ' · ',
          badge(a.outcome),
          a.message ? h('span', { class: 'muted' }, ` ${a.message}`) : null,
        ),
      ),
    ),
  );
}

function timeline(task: Task): HTMLElement {
  const steps: [string, string | null | undefined][] = [
    ['created (pending on deps)', task.created_at],
    ['wait started', task.wait?.started_at],
    ['wait resolved', task.wait?.evidence?.resolved_at],
    ['running (last attempt)', task.started_at],
    [task.finalized_at ? task.state : 'final', task.finalized_at],
  ];
  return h(
    'ol',
    { class: 'timeline', 'data-testid': 'timeline' },
    steps
      .filter(([label, at]) => at || label === 'created (pending on deps)')
      .map(([label, at]) => h('li', {}, h('span', {}, label), ' ', h('time', {}, time(at)))),
  );
}
