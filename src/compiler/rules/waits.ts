import { type Definition, type TaskDef, type TimerDef, taskPath, termPath } from '../model.js';
import type { Path, Reporter } from '../source.js';

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
        'add wait.terms: { NAME: { signal | timer | expr | workflows } }',
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
        reporter.report('wait-shape', `term "${term.name}" of task "${task.name}" needs exactly one of signal, timer, expr, workflows; it ${what}`, {
          path,
          at: 'key',
        });
      }
      if (!term.kinds.includes('signal')) {
        for (const field of ['where', 'count', 'distinct', 'renamed_from'] as const) {
          if (term[field] !== undefined)
            reporter.report('wait-shape', `term "${term.name}": "${field}" belongs to signal terms only`, { path: [...path, field], at: 'key' });
        }
      }
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
