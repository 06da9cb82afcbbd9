import { CALLBACK_KEY_PREFIX } from '../callback-key.js';
import { parseDuration } from '../duration.js';
import { type Definition, type TaskDef, type TermDef, type TimerDef, taskPath, termPath } from '../model.js';
import type { Path, Reporter } from '../source.js';
import { checkUserSchema } from './inputs-schema.js';

/** The shape of each wait: terms, their kinds, timer anchors, and groups of started workflows. */
export function checkWaits(def: Definition, reporter: Reporter): void {
  for (const task of def.tasks) {
    const wait = task.wait;
    if (!wait) continue;
    if (wait.terms.length === 0) {
      reporter.report(
        'wait-shape',
        `task "${task.name}": a wait needs at least one term`,
        { path: taskPath(task, 'wait') },
        'add wait.terms: { NAME: { signal | timer | expr | workflows | callback } }',
      );
    } else if (wait.terms.length > 1 && wait.expr === undefined) {
      reporter.report(
        'wait-shape',
        `task "${task.name}": a wait with ${wait.terms.length} terms needs an expr to combine them`,
        { path: taskPath(task, 'wait', 'terms'), at: 'key' },
        `for example expr: ${wait.terms.map((t) => t.name).join(' && ')}`,
      );
    }
    const timerNames = new Set(wait.timers.map((t) => t.name));
    for (const term of wait.terms) {
      const path = termPath(task, term);
      if (term.kinds.length !== 1) {
        const what = term.kinds.length === 0 ? 'has none' : `has ${term.kinds.join(' and ')}`;
        reporter.report('wait-shape', `term "${term.name}" of task "${task.name}" needs exactly one of ${TERM_KINDS}; it ${what}`, {
          path,
          at: 'key',
        });
      }
      const counted = term.kinds.includes('signal') || term.kinds.includes('callback');
      for (const field of ['where', 'count', 'distinct', 'renamed_from'] as const) {
        const allowed = field === 'renamed_from' ? term.kinds.includes('signal') : counted;
        if (term[field] !== undefined && !allowed) {
          const owners = field === 'renamed_from' ? 'signal terms' : 'signal and callback terms';
          reporter.report('wait-shape', `term "${term.name}": "${field}" belongs to ${owners} only`, { path: [...path, field], at: 'key' });
        }
      }
      if (term.callback) checkCallback(term, [...path, 'callback'], reporter);
      if (term.schema !== undefined) checkTermSchema(term, path, reporter);
      if (term.signal?.startsWith(CALLBACK_KEY_PREFIX))
        reporter.report('wait-shape', `term "${term.name}": signal keys starting with "${CALLBACK_KEY_PREFIX}" are callback terms' own`, {
          path: [...path, 'signal'],
        });
      if (term.signal !== undefined && term.renamed_from === term.signal) {
        reporter.report('renamed-from', `term "${term.name}": renamed_from names the key the term has now, "${term.signal}"`, {
          path: [...path, 'renamed_from'],
        });
      }
      if (term.timer) {
        if (timerNames.has(term.name)) {
          reporter.report('wait-shape', `timer "${term.name}" is declared both as a term and in wait.timers`, { path, at: 'key' });
        }
        checkAnchor(task, term.timer, [...path, 'timer'], reporter);
      }
      const wf = term.workflows;
      if (wf) {
        const wpath = [...path, 'workflows'];
        if ((wf.ids === undefined) === (wf.group === undefined)) {
          reporter.report('wait-shape', `term "${term.name}": a workflows term takes exactly one of ids or group`, { path: wpath, at: 'key' });
        }
        if (wf.mode === 'quorum' && wf.quorum === undefined) {
          reporter.report('wait-shape', `term "${term.name}": mode quorum needs "quorum: N"`, { path: [...wpath, 'mode'] });
        }
        if (wf.quorum !== undefined && wf.mode !== 'quorum') {
          reporter.report('wait-shape', `term "${term.name}": "quorum" applies only with mode: quorum`, { path: [...wpath, 'quorum'], at: 'key' });
        }
        if (Array.isArray(wf.ids) && wf.quorum !== undefined && wf.quorum > wf.ids.length) {
          reporter.report('wait-shape', `term "${term.name}": quorum ${wf.quorum} is more than the ${wf.ids.length} listed workflows`, {
            path: [...wpath, 'quorum'],
          });
        }
        if (wf.group !== undefined) checkGroup(def, task, wf.group, [...wpath, 'group'], reporter);
      }
    }
    for (const timer of wait.timers) checkAnchor(task, timer, taskPath(task, 'wait', 'timers', timer.name), reporter);
  }
}

const TERM_KINDS = 'signal, timer, expr, workflows, callback';

/** A signal term's payload schema compiles; other terms take none. */
function checkTermSchema(term: TermDef, path: Path, reporter: Reporter): void {
  if (term.kinds.includes('signal')) checkUserSchema(term.schema, [...path, 'schema'], `the payload schema of term "${term.name}"`, 'signal-schema', reporter);
  else
    reporter.report(
      'wait-shape',
      `term "${term.name}": "schema" belongs to signal terms only`,
      { path: [...path, 'schema'], at: 'key' },
      term.callback ? 'a callback term takes callback.schema' : undefined,
    );
}

/** A callback's body schema compiles, and a count its single-use links can reach. */
function checkCallback(term: TermDef, path: Path, reporter: Reporter): void {
  const cb = term.callback!;
  if (cb.schema !== undefined) checkUserSchema(cb.schema, [...path, 'schema'], `the callback schema of term "${term.name}"`, 'callback-schema', reporter);
  if (cb.expires !== undefined && parseDuration(cb.expires) === 0)
    reporter.report('invalid-duration', `term "${term.name}": links that expire at once could never be used`, { path: [...path, 'expires'] });
  const links = Array.isArray(cb.recipients) ? cb.recipients.length : typeof cb.recipients === 'string' ? undefined : 1;
  if (cb.single_use !== false && typeof term.count === 'number' && links !== undefined && term.count > links) {
    reporter.report(
      'wait-shape',
      `term "${term.name}": count ${term.count} is more than its ${links} single-use link${links === 1 ? '' : 's'}`,
      { path: [...path.slice(0, -1), 'count'] },
      links === 1 ? 'give it recipients (one link each), or single_use: false' : 'list more recipients, or lower the count',
    );
  }
}

function checkAnchor(task: TaskDef, timer: TimerDef, path: Path, reporter: Reporter): void {
  const anchor = timer.after_task_finalized?.task;
  if (anchor === undefined || task.deps.includes(anchor)) return;
  reporter.report(
    'timer-anchor',
    `timer "${timer.name}" of task "${task.name}" is anchored to "${anchor}", which is not a direct dep of "${task.name}"`,
    { path: [...path, 'after_task_finalized', 'task'] },
    `add "${anchor}" to the deps of "${task.name}"`,
  );
}

function checkGroup(def: Definition, task: TaskDef, group: string, path: Path, reporter: Reporter): void {
  const starter = def.tasks.find((t) => t.start?.group === group);
  if (starter && task.deps.includes(starter.name)) return;
  const message = starter
    ? `group "${group}" is started by task "${starter.name}", which is not a direct dep of "${task.name}"`
    : `no start task in this workflow starts a group named "${group}"`;
  reporter.report(
    'unknown-group',
    message,
    { path },
    starter ? `add "${starter.name}" to the deps of "${task.name}"` : 'a group is named by start: { group: NAME } on a direct dep',
  );
}
