import { basename, extname } from 'node:path';
import { hasTemplate } from '../cel/templates.js';
import { isCelReserved } from '../cel/types.js';
import { durationRangeProblem, parseDuration, taskTimeoutProblem } from '../duration.js';
import { type Definition, type TimerDef, taskPath, termPath } from '../model.js';
import { maxOutputProblem } from '../size.js';
import type { Reporter } from '../source.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function isTimestamp(s: string): boolean {
  return RFC3339.test(s) && !Number.isNaN(Date.parse(s));
}

/** Field combinations a schema cannot say well, names that CEL could not read, and absolute times. */
export function checkTasks(def: Definition, reporter: Reporter): void {
  if (def.timeout !== undefined && parseDuration(def.timeout) === 0) {
    reporter.report('invalid-duration', 'timeout: a workflow timeout is longer than 0', { path: ['timeout'] });
  }
  if (def.on_failure?.window !== undefined && parseDuration(def.on_failure.window) === 0) {
    reporter.report('invalid-duration', 'on_failure.window: a window to group failures in is longer than 0', { path: ['on_failure', 'window'] });
  }
  for (const task of def.tasks) {
    if (isCelReserved(task.name)) {
      reporter.report('invalid-name', `task name "${task.name}" is a reserved word in CEL`, { path: taskPath(task), at: 'key' });
    }
    if (task.kind !== undefined && task.start !== undefined) {
      reporter.report('schema', `task "${task.name}": a task has either "kind" (a handler) or "start" (child workflows), not both`, {
        path: taskPath(task, 'start'),
        at: 'key',
      });
    }
    if (task.delay !== undefined && task.scheduled_at !== undefined) {
      reporter.report('schema', `task "${task.name}": use either "delay" or "scheduled_at", not both`, { path: taskPath(task, 'scheduled_at'), at: 'key' });
    }
    if (task.key !== undefined && task.for_each === undefined) {
      reporter.report('for-each', `task "${task.name}": "key" names the expansions of for_each, and this task has no for_each`, {
        path: taskPath(task, 'key'),
        at: 'key',
      });
    }
    if (task.start !== undefined && task.for_each !== undefined) {
      reporter.report('for-each', `task "${task.name}": a start task fans out with start.for_each, not a task-level for_each`, {
        path: taskPath(task, 'for_each'),
        at: 'key',
      });
    }
    if (task.scheduled_at !== undefined) checkTimestamp(task.scheduled_at, taskPath(task, 'scheduled_at'), reporter);
    const tooLarge = task.max_output === undefined ? undefined : maxOutputProblem(task.max_output);
    if (tooLarge) reporter.report('schema', `task "${task.name}": ${tooLarge}`, { path: taskPath(task, 'max_output') });
    if (task.max_output !== undefined && task.start !== undefined)
      reporter.report('schema', `task "${task.name}": max_output limits a handler's output, and a start task has no handler`, {
        path: taskPath(task, 'max_output'),
        at: 'key',
      });
    for (const term of task.wait?.terms ?? []) {
      if (term.timer?.at !== undefined) checkTimestamp(term.timer.at, taskPath(task, 'wait', 'terms', term.name, 'timer', 'at'), reporter);
      if (isCelReserved(term.name)) {
        reporter.report('invalid-name', `term name "${term.name}" is a reserved word in CEL`, { path: taskPath(task, 'wait', 'terms', term.name), at: 'key' });
      }
    }
    for (const timer of task.wait?.timers ?? []) {
      if (timer.at !== undefined) checkTimestamp(timer.at, taskPath(task, 'wait', 'timers', timer.name, 'at'), reporter);
    }
  }
  checkRenames(def, reporter);
  checkDurationRanges(def, reporter);
}

/** Durations the schema found well formed, but too long to add to a time (a timer 10^8 days out has no date). */
function checkDurationRanges(def: Definition, reporter: Reporter): void {
  const check = (text: string | undefined, path: (string | number)[]) => {
    const problem = text === undefined ? undefined : durationRangeProblem(text);
    if (problem) reporter.report('invalid-duration', problem, { path }, 'durations go up to 100 years');
  };
  const retry = (r: Definition['defaults']['retry'], path: (string | number)[]) => {
    check(r?.initial, [...path, 'retry', 'initial']);
    check(r?.max, [...path, 'retry', 'max']);
  };
  const timer = (t: TimerDef, path: (string | number)[]) => {
    check(t.after_workflow_created, [...path, 'after_workflow_created']);
    check(t.after_wait_started, [...path, 'after_wait_started']);
    check(t.after_task_finalized?.after, [...path, 'after_task_finalized', 'after']);
  };
  const timeout = (text: string | undefined, path: (string | number)[]) => {
    const problem = text === undefined ? undefined : taskTimeoutProblem(text);
    if (problem) reporter.report('invalid-duration', problem, { path }, 'an attempt is timed by one timer; for longer work, split it or wait on a signal');
    else check(text, path);
  };
  check(def.timeout, ['timeout']);
  check(def.on_failure?.window, ['on_failure', 'window']);
  if (def.retention?.failed !== 'keep') check(def.retention?.failed, ['retention', 'failed']);
  timeout(def.defaults.timeout, ['defaults', 'timeout']);
  retry(def.defaults.retry, ['defaults']);
  for (const task of def.tasks) {
    timeout(task.timeout, taskPath(task, 'timeout'));
    check(task.delay, taskPath(task, 'delay'));
    retry(task.retry, taskPath(task));
    for (const term of task.wait?.terms ?? []) {
      if (term.timer) timer(term.timer, termPath(task, term, 'timer'));
      check(term.callback?.expires, termPath(task, term, 'callback', 'expires'));
    }
    for (const t of task.wait?.timers ?? []) timer(t, taskPath(task, 'wait', 'timers', t.name));
  }
}

/**
 * renamed_from maps an old task name onto this one for running workflows: the old name must be gone from this
 * version (else which task would the old rows become?), and each old name maps to one task.
 */
function checkRenames(def: Definition, reporter: Reporter): void {
  const names = new Set(def.tasks.map((t) => t.name));
  const claimed = new Map<string, string>();
  for (const task of def.tasks) {
    const old = task.renamed_from;
    if (old === undefined) continue;
    const at = { path: taskPath(task, 'renamed_from') };
    if (old === task.name)
      reporter.report('renamed-from', `task "${task.name}": renamed_from names the task itself`, at, 'remove renamed_from: the name did not change');
    else if (names.has(old))
      reporter.report(
        'renamed-from',
        `task "${task.name}": renamed_from "${old}", but task "${old}" still exists in this version`,
        at,
        `remove renamed_from, or rename task "${old}" too`,
      );
    else if (claimed.has(old))
      reporter.report('renamed-from', `task "${task.name}": task "${claimed.get(old)}" is renamed from "${old}" already`, at, 'an old name becomes one task');
    else claimed.set(old, task.name);
  }
}

function checkTimestamp(value: string, path: (string | number)[], reporter: Reporter): void {
  if (hasTemplate(value) || isTimestamp(value)) return;
  reporter.report('invalid-timestamp', `invalid timestamp ${JSON.stringify(value)}`, { path }, 'use RFC 3339, e.g. 2026-01-31T09:00:00Z, or a ${{ }} template');
}

/** A warning when the file name differs from the workflow name: one workflow per file, named alike. */
export function checkFileName(def: Definition, reporter: Reporter): void {
  if (def.name === undefined || !/^[a-z][a-z0-9_]*$/.test(def.name)) return;
  const file = basename(reporter.file.path, extname(reporter.file.path));
  if (file === def.name) return;
  reporter.report(
    'file-name',
    `file name "${basename(reporter.file.path)}" differs from the workflow name "${def.name}"`,
    { path: ['name'] },
    `rename the file to ${def.name}${extname(reporter.file.path)}`,
  );
}
