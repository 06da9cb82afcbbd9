import { canonicalJson } from '../compiler/canonical-json.js';
import type { NormalizedDefinition, NormalizedTask, NormalizedTerm, NormalizedTimer, NormalizedWait } from '../compiler/normalize.js';
import { argsKeys, argsShape } from './args-shape.js';
import { inputsNarrowings } from './inputs-compat.js';
import { taskCorrespondence } from './task-map.js';

/** The classes of change between two versions of a workflow (stable: `braid plan --format json` carries them). */
export type ChangeKind =
  | 'task_added'
  | 'task_removed'
  | 'task_renamed'
  | 'kind_changed'
  | 'deps_changed'
  | 'args_shape_changed'
  | 'args_changed'
  | 'wait_changed'
  | 'when_changed'
  | 'timeout_changed'
  | 'settings_changed'
  | 'inputs_changed'
  | 'output_changed'
  | 'defaults_changed'
  | 'description_changed'
  | 'triggers_changed'
  | 'on_failure_changed'
  | 'retention_changed'
  | 'schedules_changed'
  | 'flow_changed';

/** What part of a wait changed. */
export type WaitAspect =
  | 'wait_added'
  | 'wait_removed'
  | 'term_added'
  | 'term_removed'
  | 'signal_key'
  | 'where'
  | 'count'
  | 'timer'
  | 'expr'
  | 'workflows'
  | 'declared'
  | 'label';

export interface Change {
  change: ChangeKind;
  /** The task, by its name in the newer version (its old name for a removed task). */
  task?: string;
  /** For wait changes: which part. */
  aspect?: WaitAspect;
  /** The wait term concerned. */
  term?: string;
  /** One line for people: what changed, old -> new. */
  detail: string;
  /** Where the change is in the newer definition (JSON path), for positions. */
  path: (string | number)[];
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);
const show = (v: unknown) => (v === undefined ? 'none' : typeof v === 'string' ? v : canonicalJson(v));

/** Every classified change from version `from` to version `to` of one workflow, in the newer version's task order. */
export function diffDefinitions(from: NormalizedDefinition, to: NormalizedDefinition): Change[] {
  const out: Change[] = [];
  if (!same(from.description, to.description)) out.push({ change: 'description_changed', detail: 'the description changed', path: ['description'] });
  if (!same(from.inputs, to.inputs)) {
    const narrowed = inputsNarrowings(from.inputs, to.inputs);
    const detail =
      narrowed.length > 0
        ? `the inputs schema narrowed: ${narrowed.map((n) => n.message).join('; ')}`
        : 'the inputs schema changed (it accepts every input it accepted before)';
    out.push({ change: 'inputs_changed', detail, path: ['inputs'] });
  }
  if (!same(from.defaults, to.defaults))
    out.push({ change: 'defaults_changed', detail: `defaults: ${show(from.defaults)} -> ${show(to.defaults)}`, path: ['defaults'] });
  if (from.timeout_ms !== to.timeout_ms)
    out.push({ change: 'timeout_changed', detail: `workflow timeout: ${ms(from.timeout_ms)} -> ${ms(to.timeout_ms)}`, path: ['timeout'] });
  if (!same(from.output, to.output)) out.push({ change: 'output_changed', detail: 'the output template changed', path: ['output'] });
  out.push(...diffWorkflowSettings(from, to));
  const correspondence = taskCorrespondence(from, to);
  const oldName = new Map([...correspondence].map(([old, t]) => [t.name, old]));
  const fromByName = new Map(from.tasks.map((t) => [t.name, t]));
  for (const t of to.tasks) {
    const prev = oldName.has(t.name) ? fromByName.get(oldName.get(t.name)!) : undefined;
    if (!prev) {
      out.push({ change: 'task_added', task: t.name, detail: `task added (kind ${t.kind})`, path: ['tasks', t.name] });
      continue;
    }
    out.push(...diffTask(prev, t, correspondence));
  }
  for (const t of from.tasks)
    if (!correspondence.has(t.name)) out.push({ change: 'task_removed', task: t.name, detail: `task removed (kind ${t.kind})`, path: ['tasks'] });
  return out;
}

/**
 * What changed of the workflow's own settings: its triggers (which events start it, and how), its on_failure hook,
 * its retention, its schedules, its flow control (concurrency, debounce). Their runs are unaffected: what a
 * running workflow does is its tasks; these take effect for what starts, fails or ends after the deploy.
 */
function diffWorkflowSettings(from: NormalizedDefinition, to: NormalizedDefinition): Change[] {
  const out: Change[] = [];
  const events = (d: NormalizedDefinition) => (d.triggers ?? []).map((t) => t.event);
  if (!same(from.triggers, to.triggers)) {
    const [a, b] = [events(from), events(to)];
    const detail = same(a, b)
      ? `the triggers of ${b.join(', ')} changed (where, id or inputs)`
      : `triggers: ${show(a.join(', ') || undefined)} -> ${show(b.join(', ') || undefined)}`;
    out.push({ change: 'triggers_changed', detail, path: ['triggers'] });
  }
  if (!same(from.on_failure, to.on_failure)) {
    const [a, b] = [from.on_failure?.start.workflow, to.on_failure?.start.workflow];
    const regrouped = a === b && same(from.on_failure?.start, to.on_failure?.start);
    const detail =
      a !== b ? `on_failure: ${show(a)} -> ${show(b)}` : regrouped ? `on_failure groups failures otherwise` : `on_failure starts ${b} with other inputs`;
    out.push({ change: 'on_failure_changed', detail, path: ['on_failure'] });
  }
  if (!same(from.retention, to.retention)) {
    const kept = (r: NormalizedDefinition['retention']) => (r === undefined ? 'the default' : r.failed_ms === null ? 'keep' : `${r.failed_ms}ms`);
    out.push({ change: 'retention_changed', detail: `failed runs kept: ${kept(from.retention)} -> ${kept(to.retention)}`, path: ['retention'] });
  }
  if (!same(from.schedules, to.schedules)) {
    const names = (d: NormalizedDefinition) => (d.schedules ?? []).map((s) => s.name).join(', ') || undefined;
    out.push({ change: 'schedules_changed', detail: `schedules: ${show(names(from))} -> ${show(names(to))}`, path: ['schedules'] });
  }
  if (!same(from.concurrency, to.concurrency) || !same(from.debounce, to.debounce))
    out.push({
      change: 'flow_changed',
      detail: 'the concurrency or debounce changed',
      path: [from.concurrency || to.concurrency ? 'concurrency' : 'debounce'],
    });
  return out;
}

function ms(v: number | undefined | null): string {
  return v === undefined || v === null ? 'none' : `${v}ms`;
}

const SETTINGS = [
  'queue',
  'priority',
  'max_attempts',
  'retry',
  'ignore_cancelled_deps',
  'ignore_discarded_deps',
  'ignore_deleted_deps',
  'ignore_skipped_deps',
  'for_each',
  'key',
  'start',
  'delay_ms',
  'scheduled_at',
  'metadata',
  'description',
] as const;

function diffTask(prev: NormalizedTask, next: NormalizedTask, correspondence: ReadonlyMap<string, NormalizedTask>): Change[] {
  const out: Change[] = [];
  const task = next.name;
  const at = (...rest: (string | number)[]) => ['tasks', task, ...rest];
  if (prev.name !== next.name) out.push({ change: 'task_renamed', task, detail: `renamed from "${prev.name}"`, path: at('renamed_from') });
  if (prev.kind !== next.kind) out.push({ change: 'kind_changed', task, detail: `kind ${prev.kind} -> ${next.kind}`, path: at('kind') });
  const prevDeps = new Set(prev.deps.map((d) => correspondence.get(d)?.name ?? d));
  const nextDeps = new Set(next.deps);
  const added = [...nextDeps].filter((d) => !prevDeps.has(d));
  const removed = [...prevDeps].filter((d) => !nextDeps.has(d));
  if (added.length > 0 || removed.length > 0) {
    const parts = [...(added.length > 0 ? [`+${added.join(', +')}`] : []), ...(removed.length > 0 ? [`-${removed.join(', -')}`] : [])];
    out.push({ change: 'deps_changed', task, detail: `deps ${parts.join(' ')}`, path: at('deps') });
  }
  if (argsShape(prev.args) !== argsShape(next.args)) {
    // the keys say it when they differ; the shapes when only a value's type does
    const [a, b] = argsKeys(prev.args) !== argsKeys(next.args) ? [argsKeys(prev.args), argsKeys(next.args)] : [argsShape(prev.args), argsShape(next.args)];
    out.push({ change: 'args_shape_changed', task, detail: `args ${a} -> ${b}`, path: at('args') });
  } else if (!same(prev.args, next.args)) out.push({ change: 'args_changed', task, detail: 'args values changed (same shape)', path: at('args') });
  out.push(...diffWait(task, prev.wait, next.wait));
  if (prev.when !== next.when) out.push({ change: 'when_changed', task, detail: `when: ${show(prev.when)} -> ${show(next.when)}`, path: at('when') });
  if (prev.timeout_ms !== next.timeout_ms)
    out.push({ change: 'timeout_changed', task, detail: `timeout: ${ms(prev.timeout_ms)} -> ${ms(next.timeout_ms)}`, path: at('timeout') });
  const settings = SETTINGS.filter((k) => !same(prev[k], next[k]));
  if (settings.length > 0)
    out.push({
      change: 'settings_changed',
      task,
      detail: settings.map((k) => `${k}: ${show(prev[k])} -> ${show(next[k])}`).join('; '),
      path: at(settings[0] === 'delay_ms' ? 'delay' : settings[0]),
    });
  return out;
}

function diffWait(task: string, prev: NormalizedWait | undefined, next: NormalizedWait | undefined): Change[] {
  const at = (...rest: (string | number)[]) => ['tasks', task, 'wait', ...rest];
  const change = (aspect: WaitAspect, detail: string, path: (string | number)[], term?: string): Change => ({
    change: 'wait_changed',
    task,
    aspect,
    ...(term ? { term } : {}),
    detail,
    path,
  });
  if (!prev && !next) return [];
  if (!prev) return [change('wait_added', `a wait was added (${next!.expr})`, at())];
  if (!next) return [change('wait_removed', 'the wait was removed', ['tasks', task])];
  const out: Change[] = [];
  if (prev.expr !== next.expr) out.push(change('expr', `expr: ${prev.expr} -> ${next.expr}`, at('expr')));
  const prevTerms = new Map(prev.terms.map((t) => [t.name, t]));
  for (const t of next.terms) {
    const old = prevTerms.get(t.name);
    if (!old) out.push(change('term_added', `term "${t.name}" added (${termSummary(t)})`, at('terms', t.name), t.name));
    else out.push(...diffTerm(old, t).map((d) => change(d.aspect, `term "${t.name}": ${d.detail}`, at('terms', t.name, ...d.at), t.name)));
  }
  for (const t of prev.terms)
    if (!next.terms.some((x) => x.name === t.name)) out.push(change('term_removed', `term "${t.name}" removed (${termSummary(t)})`, at('terms'), t.name));
  if (!same([...prev.signals].sort(), [...next.signals].sort()) || !same(prev.timers, next.timers))
    out.push(change('declared', 'the declared signals or timers changed', at()));
  return out;
}

function termSummary(t: NormalizedTerm): string {
  switch (t.kind) {
    case 'signal':
      return `signal ${t.signal}${t.count !== 1 ? ` x${t.count}` : ''}`;
    case 'timer':
      return 'a timer';
    case 'expr':
      return `expr ${t.expr}`;
    case 'workflows':
      return `workflows ${t.workflows.mode}`;
  }
}

function diffTerm(prev: NormalizedTerm, next: NormalizedTerm): { aspect: WaitAspect; detail: string; at: string[] }[] {
  if (prev.kind !== next.kind)
    return [
      {
        aspect: next.kind === 'signal' ? 'signal_key' : next.kind === 'timer' ? 'timer' : next.kind === 'expr' ? 'expr' : 'workflows',
        detail: `${termSummary(prev)} -> ${termSummary(next)}`,
        at: [],
      },
    ];
  const out: { aspect: WaitAspect; detail: string; at: string[] }[] = [];
  if (prev.kind === 'signal' && next.kind === 'signal') {
    if (prev.signal !== next.signal) out.push({ aspect: 'signal_key', detail: `signal key ${prev.signal} -> ${next.signal}`, at: ['signal'] });
    if (prev.where !== next.where) out.push({ aspect: 'where', detail: `where: ${show(prev.where)} -> ${show(next.where)}`, at: ['where'] });
    if (prev.count !== next.count) out.push({ aspect: 'count', detail: `count ${prev.count} -> ${next.count}`, at: ['count'] });
  } else if (prev.kind === 'timer' && next.kind === 'timer') {
    if (!same(prev.timer, next.timer)) out.push({ aspect: 'timer', detail: `timer ${timerSummary(prev.timer)} -> ${timerSummary(next.timer)}`, at: ['timer'] });
  } else if (prev.kind === 'expr' && next.kind === 'expr') {
    if (prev.expr !== next.expr) out.push({ aspect: 'expr', detail: `expr: ${prev.expr} -> ${next.expr}`, at: ['expr'] });
  } else if (prev.kind === 'workflows' && next.kind === 'workflows') {
    if (!same(prev.workflows, next.workflows))
      out.push({ aspect: 'workflows', detail: `workflows ${canonicalJson(prev.workflows)} -> ${canonicalJson(next.workflows)}`, at: ['workflows'] });
  }
  if (prev.label !== next.label) out.push({ aspect: 'label', detail: `label ${show(prev.label)} -> ${show(next.label)}`, at: ['label'] });
  return out;
}

function timerSummary(t: NormalizedTimer): string {
  switch (t.anchor) {
    case 'at':
      return `at ${t.at}`;
    case 'workflow_created':
      return `${t.after_ms}ms after the workflow started`;
    case 'wait_started':
      return `${t.after_ms}ms after the wait started`;
    case 'task_finalized':
      return `${t.after_ms}ms after ${t.task} ended`;
  }
}
