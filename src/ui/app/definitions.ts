import { pathTo } from '../../api/route-table.js';
import { get, type Live, live } from './api.js';
import { DagView } from './dag.js';
import { badge, clear, h, time } from './dom.js';
import { schedulesSection } from './schedules.js';

interface DefinitionEntry {
  name: string;
  current_hash: string;
  file: string | null;
  valid: boolean;
  diagnostics: { severity: string; message: string; file: string; line: number; column: number; rule: string; hint?: string }[];
  versions: { hash: string; file: string | null; registered_at: string; current: boolean; running: number; state: 'current' | 'draining' | 'drained' }[];
}

interface VersionDiff {
  from: string;
  to: string;
  changes: { change: string; task?: string; detail: string }[];
}

interface StoredDefinition {
  name: string;
  hash: string;
  normalized: { tasks: { name: string; kind: string; deps: string[]; for_each?: unknown; wait?: unknown; start?: { workflow: string } }[] };
}

/** A template's card: its file, its diagnostics, its versions with their drain states and links. */
function card(d: DefinitionEntry): HTMLElement {
  return h(
    'article',
    { class: 'definition', 'data-definition': d.name },
    h('h2', {}, h('a', { href: `/definitions?name=${encodeURIComponent(d.name)}`, 'data-link': true }, d.name), ' ', badge(d.valid ? 'valid' : 'invalid')),
    d.file && h('p', { class: 'mono muted' }, d.file),
    d.diagnostics.length > 0 &&
      h(
        'ul',
        { class: 'diagnostics' },
        d.diagnostics.map((x) =>
          h(
            'li',
            { class: x.severity },
            `${x.line}:${x.column} ${x.severity}: ${x.message} [${x.rule}]`,
            x.hint ? h('div', { class: 'muted' }, `hint: ${x.hint}`) : null,
          ),
        ),
      ),
    h(
      'ol',
      { class: 'versions' },
      d.versions.map((v) =>
        h(
          'li',
          { 'data-version': v.hash, 'data-state': v.state },
          h('a', { href: `/definitions?name=${encodeURIComponent(d.name)}&hash=${v.hash}`, 'data-link': true, class: 'mono' }, v.hash.slice(0, 12)),
          ` ${time(v.registered_at)} `,
          h('span', { class: `drain drain-${v.state}` }, v.state === 'draining' ? `draining (${v.running} running)` : v.state),
          v.current && v.running > 0 ? ` ${v.running} running` : null,
          !v.current
            ? [
                ' ',
                h('a', { href: `/definitions?name=${encodeURIComponent(d.name)}&diff=${v.hash}`, 'data-link': true, class: 'diff-link' }, 'changes to current'),
              ]
            : null,
        ),
      ),
    ),
  );
}

/**
 * Every template, its versions (each with its drain state: current, draining with the workflows still running
 * on it, drained), the diagnostics of its current file, and a graph preview of a version, or the classified
 * changes from an older version to the current one (?diff=HASH).
 */
export function definitionsPage(app: HTMLElement, params: URLSearchParams): Live {
  const list = h('div', { class: 'definitions', 'data-testid': 'definitions' });
  const preview = h('section', { class: 'preview' });
  const dag = new DagView(() => undefined);
  clear(app);
  app.append(h('h1', {}, 'Definitions'), h('div', { class: 'defs-body' }, list, preview));

  async function load(): Promise<void> {
    const { definitions } = await get<{ definitions: DefinitionEntry[] }>(pathTo('definitions', {}));
    clear(list);
    if (definitions.length === 0) list.append(h('p', { class: 'empty' }, 'No definitions registered yet.'));
    for (const d of definitions) list.append(card(d));
    const name = params.get('name') ?? definitions[0]?.name;
    const diff = params.get('diff');
    if (name && diff) await showDiff(name, diff);
    else if (name) await showGraph(name, params.get('hash') ?? undefined);
  }

  async function showGraph(name: string, hash: string | undefined): Promise<void> {
    const def = await get<StoredDefinition>(pathTo('definition', { name }, { hash: hash || undefined }));
    const schedules = await schedulesSection(name);
    clear(preview);
    preview.append(h('h2', {}, `${def.name} `, h('span', { class: 'mono muted' }, def.hash.slice(0, 12))), h('div', { class: 'graph' }, dag.element));
    if (schedules) preview.append(schedules);
    const nodes = def.normalized.tasks.map((t) => ({
      id: t.name,
      title: t.for_each !== undefined ? `${t.name} (for each)` : t.name,
      subtitle: t.start ? `starts ${t.start.workflow}` : t.kind,
      wait: t.wait ? 'has a wait' : null,
    }));
    const edges = def.normalized.tasks.flatMap((t) => t.deps.map((d) => ({ from: d, to: t.name })));
    dag.render(def.hash, nodes, edges);
  }

  async function showDiff(name: string, from: string): Promise<void> {
    const diff = await get<VersionDiff>(pathTo('diff', { name }, { from }));
    clear(preview);
    preview.append(
      h('h2', {}, `${name} `, h('span', { class: 'mono muted' }, `${diff.from.slice(0, 12)} → ${diff.to.slice(0, 12)}`)),
      diff.changes.length === 0
        ? h('p', { class: 'empty' }, 'No change braid classifies.')
        : h(
            'ul',
            { class: 'changes', 'data-testid': 'changes' },
            diff.changes.map((c) =>
              h(
                'li',
                { 'data-change': c.change },
                h('strong', {}, c.task !== undefined ? `task ${c.task}` : 'workflow'),
                `: ${c.detail} `,
                h('span', { class: 'muted mono' }, c.change),
              ),
            ),
          ),
    );
  }

  void load();
  // the page follows reloads: every dev event re-reads the definitions
  return live<unknown>(
    pathTo('events', {}, { limit: 1 }),
    pathTo('workflows', {}, { limit: 1 }),
    () => undefined,
    () => void load(),
  );
}
