/**
 * The checks of a test file against the definitions it tests: every task it mocks or expects exists (rule
 * `test-unknown-task`), every signal it emits is one some task waits on (`test-unknown-signal`), every
 * `kind:NAME` it mocks is a kind the workflow runs (`test-mock-kind`), every mock's output fits its task's
 * `returns` (`test-mock-output`). Pure: definitions in, diagnostics out.
 */
import { didYouMean, pointer } from '../compiler/diagnostics.js';
import { type NormalizedDefinition, type NormalizedTask, START_KIND } from '../compiler/normalize.js';
import { describeOutputProblems, outputProblems } from '../compiler/returns.js';
import type { Path, Reporter } from '../compiler/source.js';
import { declaredKeys } from '../runtime/test-support.js';
import { templateOf } from './mocks.js';
import type { Expect, RawTestFile } from './test-file.js';

/** The workflow under test and every workflow it starts (through start tasks, transitively). */
export function workflowTree(name: string, definitions: ReadonlyMap<string, NormalizedDefinition>): NormalizedDefinition[] {
  const out: NormalizedDefinition[] = [];
  const stack = [name];
  while (stack.length > 0) {
    const def = definitions.get(stack.pop()!);
    if (!def || out.includes(def)) continue;
    out.push(def);
    for (const t of def.tasks) if (t.start) stack.push(t.start.workflow);
  }
  return out;
}

/** The kinds a workflow tree runs on handlers (start tasks run on braid's own). */
export function kindsOf(tree: readonly NormalizedDefinition[]): string[] {
  return [...new Set(tree.flatMap((d) => d.tasks.filter((t) => t.kind !== START_KIND).map((t) => t.kind)))].sort();
}

export function checkTestFile(raw: RawTestFile, definitions: ReadonlyMap<string, NormalizedDefinition>, reporter: Reporter): void {
  const def = definitions.get(raw.workflow);
  if (!def) {
    const guess = didYouMean(raw.workflow, definitions.keys());
    reporter.report(
      'test-schema',
      `no workflow named "${raw.workflow}" is defined`,
      { path: ['workflow'] },
      guess ? `did you mean "${guess}"?` : `defined: ${[...definitions.keys()].sort().join(', ') || 'none'}`,
    );
    return;
  }
  const tree = workflowTree(raw.workflow, definitions);
  const kinds = kindsOf(tree);
  const tasks = def.tasks.map((t) => t.name);
  const keys = [...new Set(def.tasks.flatMap((t) => (t.wait ? declaredKeys(t.wait) : [])))].sort();

  // a mock's output must be one the real handler could return: its task's `returns` (said once per mock)
  const mockOutput = (mock: unknown, task: NormalizedTask, path: Path) => {
    if (task.returns === undefined || typeof mock !== 'object' || mock === null || !('output' in mock)) return;
    if (reporter.diagnostics.some((d) => d.rule === 'test-mock-output' && d.path === pointer([...path, 'output']))) return;
    const problems = outputProblems(task.returns, (mock as { output: unknown }).output);
    if (problems.length === 0) return;
    reporter.report(
      'test-mock-output',
      `the mock's output breaks the returns schema of task "${task.name}": ${describeOutputProblems(problems)}`,
      { path: [...path, 'output'], at: 'key' },
      'the real handler could never return it: fix the mock (or the schema)',
    );
  };

  const mocks = (m: Record<string, unknown> | undefined, at: Path) => {
    for (const key of Object.keys(m ?? {})) {
      const path = [...at, key];
      if (key.startsWith('kind:')) {
        const kind = key.slice(5);
        if (kinds.includes(kind)) {
          for (const t of tree.flatMap((d) => d.tasks.filter((x) => x.kind === kind))) mockOutput(m?.[key], t, path);
          continue;
        }
        const guess = didYouMean(kind, kinds);
        reporter.report(
          'test-mock-kind',
          `no task of ${raw.workflow} runs kind "${kind}"`,
          { path, at: 'key' },
          guess ? `did you mean "kind:${guess}"?` : `kinds: ${kinds.join(', ') || 'none'}`,
        );
        continue;
      }
      const [owner, task] = key.includes('.') ? key.split('.') : [raw.workflow, key];
      const ownerDef = tree.find((d) => d.name === owner);
      if (!ownerDef || (key.includes('.') && owner === raw.workflow)) {
        const starts = tree.filter((d) => d.name !== raw.workflow).map((d) => d.name);
        reporter.report(
          'test-unknown-task',
          `"${owner}" is not a workflow that ${raw.workflow} starts`,
          { path, at: 'key' },
          starts.length ? `it starts: ${starts.join(', ')}` : `a task of ${raw.workflow} is mocked by its name alone`,
        );
        continue;
      }
      const found = ownerDef.tasks.find((t) => t.name === task);
      if (!found) {
        const names = ownerDef.tasks.map((t) => t.name);
        const guess = didYouMean(task, names);
        reporter.report(
          'test-unknown-task',
          `${ownerDef.name} has no task "${task}"`,
          { path, at: 'key' },
          guess ? `did you mean "${key.includes('.') ? `${owner}.` : ''}${guess}"?` : `its tasks: ${names.join(', ')}`,
        );
      } else if (found.kind !== START_KIND) {
        mockOutput(m?.[key], found, path);
      } else {
        reporter.report(
          'test-unknown-task',
          `task "${task}" starts ${found.start!.workflow} workflows, which run for real: mock their tasks instead`,
          { path, at: 'key' },
          `e.g. "${found.start!.workflow}.TASK"`,
        );
      }
    }
  };

  const expectation = (e: Expect | undefined, at: Path) => {
    for (const [name, value] of Object.entries(e?.tasks ?? {})) {
      const path = [...at, 'tasks', name];
      const base = templateOf(name);
      const task = def.tasks.find((t) => t.name === base);
      if (!task) {
        const guess = didYouMean(base, tasks);
        reporter.report(
          'test-unknown-task',
          `${raw.workflow} has no task "${base}"`,
          { path, at: 'key' },
          guess ? `did you mean "${guess}"?` : `its tasks: ${tasks.join(', ')}`,
        );
        continue;
      }
      if (name !== base && task.for_each === undefined)
        reporter.report('test-unknown-task', `task "${base}" has no for_each: it has no expansion ${name}`, { path, at: 'key' });
      if (typeof value !== 'object') continue;
      const terms = task.wait?.terms.map((t) => t.name) ?? [];
      for (const term of Object.keys(value.wait ?? {})) {
        if (terms.includes(term)) continue;
        const guess = didYouMean(term, terms);
        reporter.report(
          'test-unknown-task',
          `task "${base}" has no wait term "${term}"`,
          { path: [...path, 'wait', term], at: 'key' },
          guess ? `did you mean "${guess}"?` : terms.length ? `its terms: ${terms.join(', ')}` : 'the task has no wait',
        );
      }
    }
  };

  const schedules = (def.schedules ?? []).map((x) => x.name);
  // the schedules a test runs, and those its expected runs name, are the workflow's
  const scheduleNamed = (name: string, path: Path) => {
    if (schedules.includes(name)) return;
    const guess = didYouMean(name, schedules);
    reporter.report(
      'test-schema',
      `${raw.workflow} has no schedule "${name}"`,
      { path },
      guess ? `did you mean "${guess}"?` : schedules.length ? `its schedules: ${schedules.join(', ')}` : `${raw.workflow} declares no schedules`,
    );
  };

  mocks(raw.mocks, ['mocks']);
  raw.tests.forEach((t, i) => {
    mocks(t.mocks, ['tests', i, 'mocks']);
    expectation(t.expect, ['tests', i, 'expect']);
    if (t.schedules === true && schedules.length === 0)
      reporter.report('test-schema', `${raw.workflow} declares no schedules to run`, { path: ['tests', i, 'schedules'] });
    for (const [j, name] of (Array.isArray(t.schedules) ? t.schedules : []).entries()) scheduleNamed(name, ['tests', i, 'schedules', j]);
    for (const [j, r] of (t.expect?.runs ?? []).entries()) scheduleNamed(r.schedule, ['tests', i, 'expect', 'runs', j, 'schedule']);
    const started = t.inputs !== undefined || !t.schedules;
    for (const key of ['state', 'reason', 'output', 'tasks'] as const)
      if (!started && t.expect && key in t.expect)
        reporter.report('test-schema', `expect.${key} is about the test's own run: give the test inputs, or expect the schedules' runs`, {
          path: ['tests', i, 'expect', key],
          at: 'key',
        });
    if (!started)
      (t.steps ?? []).forEach((step, j) => {
        for (const key of ['signal', 'cancel', 'retry'])
          if (key in step)
            reporter.report('test-schema', `a ${key} step needs the test's own run: give the test inputs (only the schedules start runs without)`, {
              path: ['tests', i, 'steps', j, key],
              at: 'key',
            });
      });
    (t.steps ?? []).forEach((step, j) => {
      if ('expect' in step) expectation(step.expect as Expect, ['tests', i, 'steps', j, 'expect']);
      if ('signal' in step) {
        const key = (step.signal as { key: string }).key;
        if (keys.includes(key)) return;
        const guess = didYouMean(key, keys);
        reporter.report(
          'test-unknown-signal',
          `no task of ${raw.workflow} waits on signal "${key}"`,
          { path: ['tests', i, 'steps', j, 'signal', 'key'] },
          guess ? `did you mean "${guess}"?` : keys.length ? `it waits on: ${keys.join(', ')}` : `${raw.workflow} waits on no signal`,
        );
      }
    });
  });
}
