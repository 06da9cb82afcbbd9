import { LineCounter } from 'yaml';
import { declaredKeys } from '../compiler/declared-keys.js';
import type { Diagnostic, Rule } from '../compiler/diagnostics.js';
import { type NormalizedDefinition, START_KIND } from '../compiler/normalize.js';
import { nodeAt, type Path, Reporter, type SourceFile } from '../compiler/source.js';
import type { WorkflowDefinition } from '../compiler/validate.js';
import { argsKeys, argsShape } from './args-shape.js';
import { type BaselineVersion, inFlight } from './baseline.js';
import { inputsNarrowings } from './inputs-compat.js';
import { movability, movableWorkflows, upgradeSuggestion } from './movable.js';
import { taskCorrespondence } from './task-map.js';

/** The kinds the handlers module to deploy has, and its path for messages. */
export interface HandlerSet {
  file: string;
  kinds: ReadonlySet<string>;
}

/**
 * What deploying `next` (the definitions' version of one workflow, absent when the definitions no longer
 * have it) would do to the workflows in flight, as diagnostics at the task concerned: kinds left without a
 * handler, signal keys old runs wait on that the new version dropped, a kind's args in two shapes, inputs the
 * current version accepted that the new one refuses. `versions` are the name's current version and every
 * version with running workflows.
 */
export function deployFindings(
  name: string,
  next: WorkflowDefinition | undefined,
  versions: readonly BaselineVersion[],
  handlers: HandlerSet | undefined,
): Diagnostic[] {
  const reporter = new Reporter(next?.source ?? emptySource(handlers?.file ?? 'braid.config.yaml'));
  const inUse = versions.filter((v) => v.running !== 0);
  const older = inUse.filter((v) => v.hash !== next?.hash);
  const report = (rule: Rule, message: string, path: Path, hint: string) => {
    const resolved = next ? existingPath(next.source, path) : [];
    // a path that ends at a mapping (the tasks block, a task without args) points at its key, not its body
    reporter.report(rule, message, { path: resolved, at: resolved.length < path.length || resolved.length === 1 ? 'key' : 'value' }, hint);
  };
  if (handlers) missingHandlers(name, next, inUse, handlers, report);
  if (next) {
    unmovable(next, older, report);
    signalKeys(next, older, report);
    timerAnchors(next, older, report);
    argsShapes(next, older, report);
    const current = versions.find((v) => v.current);
    if (current && current.hash !== next.hash) {
      for (const n of inputsNarrowings(current.normalized.inputs, next.normalized.inputs)) {
        report(
          'deploy-inputs',
          `${n.message} (the current version ${current.hash.slice(0, 12)} accepts such starts)`,
          n.path,
          'keep the schema as wide as before (a default, the old type), or make sure every caller of braid start sends what it needs first',
        );
      }
    }
  }
  return reporter.diagnostics;
}

type Report = (rule: Rule, message: string, path: Path, hint: string) => void;

/** The kinds each older version may still need: what its running tasks need, or (unknown) every kind it uses. */
function neededKinds(v: BaselineVersion): Map<string, number | undefined> {
  if (v.kinds) return new Map(Object.entries(v.kinds));
  return new Map(v.normalized.tasks.map((t) => [t.kind, undefined]));
}

function missingHandlers(name: string, next: WorkflowDefinition | undefined, inUse: readonly BaselineVersion[], handlers: HandlerSet, report: Report): void {
  const byKind = new Map<string, { versions: string[]; task?: string }>();
  const need = (kind: string) => {
    let entry = byKind.get(kind);
    if (!entry) byKind.set(kind, (entry = { versions: [] }));
    return entry;
  };
  for (const t of next?.normalized.tasks ?? []) if (t.kind !== START_KIND && !handlers.kinds.has(t.kind)) need(t.kind).task ??= t.name;
  for (const v of inUse) {
    for (const [kind, count] of neededKinds(v))
      if (kind !== START_KIND && !handlers.kinds.has(kind)) need(kind).versions.push(inFlight(v, count, ['needs it', 'need it']));
  }
  for (const [kind, { versions, task }] of byKind) {
    const where = task !== undefined ? { path: ['tasks', task, 'kind'] } : taskOfKind(next, inUse, kind);
    const gone =
      where.removed && where.removed.length > 0
        ? ` (task${where.removed.length > 1 ? 's' : ''} ${where.removed.map((n) => `"${n}"`).join(', ')}, ` +
          `which used it, ${where.removed.length > 1 ? 'are' : 'is'} gone from this version)`
        : '';
    const who = [...(task !== undefined ? [`task "${task}" uses it`] : []), ...versions].join('; ');
    const hint =
      versions.length > 0
        ? `keep a handler for ${kind} until they end (braid versions ${name} shows the drain)` +
          upgradeSuggestion(
            name,
            inUse.filter((v) => v.hash !== next?.hash),
            next?.normalized,
          )
        : `add a handler for ${kind} to ${handlers.file}`;
    report('deploy-missing-handler', `kind "${kind}" has no handler in ${handlers.file}: ${who}${gone}`, where.path, hint);
  }
}

/** The task of the new version that an older version's task of `kind` became, or the tasks block (naming the tasks removed). */
function taskOfKind(next: WorkflowDefinition | undefined, older: readonly BaselineVersion[], kind: string): { path: Path; removed?: string[] } {
  if (!next) return { path: [] };
  const removed = new Set<string>();
  for (const v of older) {
    const map = taskCorrespondence(v.normalized, next.normalized);
    const old = v.normalized.tasks.find((t) => t.kind === kind && map.has(t.name));
    if (old) return { path: ['tasks', map.get(old.name)!.name, 'kind'] };
    for (const t of v.normalized.tasks) if (t.kind === kind) removed.add(t.name);
  }
  return { path: ['tasks'], removed: [...removed] };
}

function signalKeys(next: WorkflowDefinition, older: readonly BaselineVersion[], report: Report): void {
  const declared = new Set(next.normalized.tasks.flatMap((t) => (t.wait ? declaredKeys(t.wait) : [])));
  for (const v of older) {
    const waited = v.keys
      ? new Map(Object.entries(v.keys))
      : new Map(v.normalized.tasks.flatMap((t) => (t.wait ? declaredKeys(t.wait) : [])).map((k) => [k, undefined]));
    for (const [key, count] of waited) {
      if (declared.has(key)) continue;
      report(
        'deploy-signal-key',
        `${inFlight(v, count, [`waits on signal key "${key}"`, `wait on signal key "${key}"`])}, which this ` +
          `version no longer declares: senders must keep sending "${key}" to them while they run`,
        termOfKey(next, v.normalized, key),
        signalHint(next, v, key),
      );
    }
  }
}

function signalHint(next: WorkflowDefinition, v: BaselineVersion, key: string): string {
  const who = movableWorkflows([v], next.normalized);
  if (who === 'none') return `senders must keep sending "${key}" until they end: none of them can move (deploy-unmovable says why)`;
  const which = who === 'some' ? 'the ones that can (deploy-unmovable says which cannot)' : 'them';
  return (
    `give the term that replaces it renamed_from: ${key} (its signals keep counting; senders may use either key), ` +
    `or move ${which} with braid upgrade ${next.name} (refused where signals that counted would stop counting, unless --drop-evidence)`
  );
}

/** Timer terms of tasks in flight whose anchor this version changes: a move would time them anew. */
function timerAnchors(next: WorkflowDefinition, older: readonly BaselineVersion[], report: Report): void {
  for (const v of older) {
    const map = taskCorrespondence(v.normalized, next.normalized);
    for (const t of v.normalized.tasks) {
      const now = map.get(t.name);
      for (const term of t.wait?.terms ?? []) {
        const after = now?.wait?.terms.find((x) => x.name === term.name);
        if (term.kind !== 'timer' || after?.kind !== 'timer' || anchor(after.timer) === anchor(term.timer)) continue;
        report(
          'deploy-unmovable',
          `${inFlight(v, undefined, [`may be waiting in task "${t.name}"`, `may be waiting in task "${t.name}"`])}: its timer term ` +
            `"${term.name}" is timed from ${anchor(term.timer)} there and from ${anchor(after.timer)} here, so braid upgrade refuses ` +
            'a run whose wait has started, unless --drop-evidence',
          ['tasks', now!.name, 'wait', 'terms', term.name, 'timer'],
          'keep the anchor until they end, or move them with braid upgrade --drop-evidence (their timers are then computed anew)',
        );
      }
    }
  }
}

function anchor(timer: { anchor: string; task?: string }): string {
  return timer.anchor === 'task_finalized' ? `the end of task ${timer.task}` : timer.anchor.replace('_', ' ');
}

/** Where a key went: the new version's term of the same task and name, else the task's wait, else the tasks block. */
function termOfKey(next: WorkflowDefinition, prev: NormalizedDefinition, key: string): Path {
  const map = taskCorrespondence(prev, next.normalized);
  for (const t of prev.tasks) {
    const term = t.wait?.terms.find((x) => x.kind === 'signal' && x.signal === key);
    const now = map.get(t.name);
    if (!term || !now) continue;
    const same = now.wait?.terms.find((x) => x.name === term.name);
    if (same) return ['tasks', now.name, 'wait', 'terms', same.name, same.kind === 'signal' ? 'signal' : same.kind];
    return ['tasks', now.name, now.wait ? 'wait' : 'kind'];
  }
  return ['tasks'];
}

function argsShapes(next: WorkflowDefinition, older: readonly BaselineVersion[], report: Report): void {
  const shapes = new Map<string, { task: string; shape: string; args: unknown }[]>();
  for (const t of next.normalized.tasks)
    if (t.kind !== START_KIND) shapes.set(t.kind, [...(shapes.get(t.kind) ?? []), { task: t.name, shape: argsShape(t.args), args: t.args }]);
  const reported = new Set<string>();
  for (const v of older) {
    for (const t of v.normalized.tasks) {
      const mine = shapes.get(t.kind);
      if (!mine || (v.kinds && !(t.kind in v.kinds))) continue;
      const shape = argsShape(t.args);
      if (mine.some((m) => m.shape === shape) || reported.has(`${t.kind} ${shape}`)) continue;
      reported.add(`${t.kind} ${shape}`);
      report(
        'deploy-args-shape',
        `kind "${t.kind}" gets args ${argsKeys(mine[0].args)} here and ${argsKeys(t.args)} from task "${t.name}" ` +
          `of ${v.hash.slice(0, 12)} (${v.running === null ? 'may still run' : `${v.running} running`}): its handler receives both shapes`,
        ['tasks', mine[0].task, 'args'],
        `let the handler accept both until the old runs end${upgradeSuggestion(next.name, [v], next.normalized)}`,
      );
    }
  }
}

/** Per older version, the running workflows `braid upgrade` could not move to this version, and why. */
function unmovable(next: WorkflowDefinition, older: readonly BaselineVersion[], report: Report): void {
  for (const v of older) {
    const m = movability(v, next.normalized);
    if (!m || m.blocked === 0) continue;
    const several = m.blockers.length > 1;
    const why = m.blockers.map((b) => `${b.reason} (${several ? `${b.n}, ` : ''}first: ${b.first.join(', ')})`).join('; ');
    report(
      'deploy-unmovable',
      `${m.blocked} of ${m.running} running on ${v.hash.slice(0, 12)} cannot move to this version with braid upgrade: ${why}`,
      ['tasks'],
      m.blockers.every((b) => b.cancellable)
        ? `braid upgrade ${next.name} --cancel-removed cancels those tasks and moves them; or let them end on their version`
        : 'they move once what blocks them ends (upgrade again then), or end on their version: keep what they need until then',
    );
  }
}

/** The deepest prefix of a path that exists in the file (a task's args may be left out: point at the task). */
function existingPath(source: SourceFile, path: Path): Path {
  if (!source.doc) return [];
  for (let n = path.length; n > 0; n--) if (nodeAt(source.doc, path.slice(0, n)) !== undefined) return path.slice(0, n);
  return [];
}

function emptySource(path: string): SourceFile {
  return { path, text: '', lineCounter: new LineCounter() };
}
