/**
 * The checks of a test file against the definitions it tests: every task it mocks or expects exists (rule
 * `test-unknown-task`), every signal it emits is one some task waits on (`test-unknown-signal`), every
 * `kind:NAME` it mocks is a kind the workflow runs (`test-mock-kind`), every mock's output fits its task's
 * `returns` (`test-mock-output`). Pure: definitions in, diagnostics out.
 */

import { declaredKeys } from '../compiler/declared-keys.js';
import { didYouMean, pointer } from '../compiler/diagnostics.js';
import { type NormalizedDefinition, type NormalizedTask, START_KIND } from '../compiler/normalize.js';
import { describeOutputProblems, outputProblems } from '../compiler/returns.js';
import type { Path, Reporter } from '../compiler/source.js';
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
  const checker = new TestFileChecker(raw, def, workflowTree(raw.workflow, definitions), reporter);
  checker.mocks(raw.mocks, ['mocks']);
  for (const [i, t] of raw.tests.entries()) checker.test(t, i);
}

/** The checks of one test file against its workflow (and the workflows it starts). */
class TestFileChecker {
  private readonly kinds: string[];
  private readonly tasks: string[];
  private readonly keys: string[];
  private readonly schedules: string[];

  constructor(
    private readonly raw: RawTestFile,
    private readonly def: NormalizedDefinition,
    private readonly tree: readonly NormalizedDefinition[],
    private readonly reporter: Reporter,
  ) {
    this.kinds = kindsOf(tree);
    this.tasks = def.tasks.map((t) => t.name);
    this.keys = [...new Set(def.tasks.flatMap((t) => (t.wait ? declaredKeys(t.wait) : [])))].sort();
    this.schedules = (def.schedules ?? []).map((x) => x.name);
  }

  test(t: RawTestFile['tests'][number], i: number): void {
    this.mocks(t.mocks, ['tests', i, 'mocks']);
    this.expectation(t.expect, ['tests', i, 'expect']);
    if (t.schedules === true && this.schedules.length === 0)
      this.reporter.report('test-schema', `${this.raw.workflow} declares no schedules to run`, { path: ['tests', i, 'schedules'] });
    for (const [j, name] of (Array.isArray(t.schedules) ? t.schedules : []).entries()) this.scheduleNamed(name, ['tests', i, 'schedules', j]);
    for (const [j, r] of (t.expect?.runs ?? []).entries()) this.scheduleNamed(r.schedule, ['tests', i, 'expect', 'runs', j, 'schedule']);
    const started = t.inputs !== undefined || (!t.schedules && !(t.steps ?? []).some((step) => 'emit' in step));
    for (const key of ['state', 'reason', 'output', 'tasks'] as const)
      if (!started && t.expect && key in t.expect)
        this.reporter.report('test-schema', `expect.${key} is about the test's own run: give the test inputs, or expect the runs others started`, {
          path: ['tests', i, 'expect', key],
          at: 'key',
        });
    if (!started)
      (t.steps ?? []).forEach((step, j) => {
        for (const key of ['signal', 'callback', 'cancel', 'retry'])
          if (key in step)
            this.reporter.report('test-schema', `a ${key} step needs the test's own run: give the test inputs (only schedules and events start runs without)`, {
              path: ['tests', i, 'steps', j, key],
              at: 'key',
            });
      });
    (t.steps ?? []).forEach((step, j) => {
      if ('expect' in step) this.expectation(step.expect as Expect, ['tests', i, 'steps', j, 'expect']);
      if ('signal' in step) {
        const key = (step.signal as { key: string }).key;
        if (this.keys.includes(key)) return;
        const guess = didYouMean(key, this.keys);
        this.reporter.report(
          'test-unknown-signal',
          `no task of ${this.raw.workflow} waits on signal "${key}"`,
          { path: ['tests', i, 'steps', j, 'signal', 'key'] },
          guess ? `did you mean "${guess}"?` : this.keys.length ? `it waits on: ${this.keys.join(', ')}` : `${this.raw.workflow} waits on no signal`,
        );
      }
    });
  }

  mocks(m: Record<string, unknown> | undefined, at: Path): void {
    for (const key of Object.keys(m ?? {})) {
      const path = [...at, key];
      if (key.startsWith('kind:')) {
        const kind = key.slice(5);
        if (this.kinds.includes(kind)) {
          for (const t of this.tree.flatMap((d) => d.tasks.filter((x) => x.kind === kind))) this.mockOutput(m?.[key], t, path);
          continue;
        }
        const guess = didYouMean(kind, this.kinds);
        this.reporter.report(
          'test-mock-kind',
          `no task of ${this.raw.workflow} runs kind "${kind}"`,
          { path, at: 'key' },
          guess ? `did you mean "kind:${guess}"?` : `kinds: ${this.kinds.join(', ') || 'none'}`,
        );
        continue;
      }
      const [owner, task] = key.includes('.') ? key.split('.') : [this.raw.workflow, key];
      const ownerDef = this.tree.find((d) => d.name === owner);
      if (!ownerDef || (key.includes('.') && owner === this.raw.workflow)) {
        const starts = this.tree.filter((d) => d.name !== this.raw.workflow).map((d) => d.name);
        this.reporter.report(
          'test-unknown-task',
          `"${owner}" is not a workflow that ${this.raw.workflow} starts`,
          { path, at: 'key' },
          starts.length ? `it starts: ${starts.join(', ')}` : `a task of ${this.raw.workflow} is mocked by its name alone`,
        );
        continue;
      }
      const found = ownerDef.tasks.find((t) => t.name === task);
      if (!found) {
        const names = ownerDef.tasks.map((t) => t.name);
        const guess = didYouMean(task, names);
        this.reporter.report(
          'test-unknown-task',
          `${ownerDef.name} has no task "${task}"`,
          { path, at: 'key' },
          guess ? `did you mean "${key.includes('.') ? `${owner}.` : ''}${guess}"?` : `its tasks: ${names.join(', ')}`,
        );
      } else if (found.kind !== START_KIND) {
        this.mockOutput(m?.[key], found, path);
      } else {
        this.reporter.report(
          'test-unknown-task',
          `task "${task}" starts ${found.start!.workflow} workflows, which run for real: mock their tasks instead`,
          { path, at: 'key' },
          `e.g. "${found.start!.workflow}.TASK"`,
        );
      }
    }
  }

  /** A mock's output must be one the real handler could return: its task's `returns` (said once per mock). */
  private mockOutput(mock: unknown, task: NormalizedTask, path: Path): void {
    if (task.returns === undefined || typeof mock !== 'object' || mock === null || !('output' in mock)) return;
    if (this.reporter.diagnostics.some((d) => d.rule === 'test-mock-output' && d.path === pointer([...path, 'output']))) return;
    const problems = outputProblems(task.returns, (mock as { output: unknown }).output);
    if (problems.length === 0) return;
    this.reporter.report(
      'test-mock-output',
      `the mock's output breaks the returns schema of task "${task.name}": ${describeOutputProblems(problems)}`,
      { path: [...path, 'output'], at: 'key' },
      'the real handler could never return it: fix the mock (or the schema)',
    );
  }

  private expectation(e: Expect | undefined, at: Path): void {
    for (const [name, value] of Object.entries(e?.tasks ?? {})) {
      const path = [...at, 'tasks', name];
      const base = templateOf(name);
      const task = this.def.tasks.find((t) => t.name === base);
      if (!task) {
        const guess = didYouMean(base, this.tasks);
        this.reporter.report(
          'test-unknown-task',
          `${this.raw.workflow} has no task "${base}"`,
          { path, at: 'key' },
          guess ? `did you mean "${guess}"?` : `its tasks: ${this.tasks.join(', ')}`,
        );
        continue;
      }
      if (name !== base && task.for_each === undefined)
        this.reporter.report('test-unknown-task', `task "${base}" has no for_each: it has no expansion ${name}`, { path, at: 'key' });
      if (typeof value !== 'object') continue;
      const terms = task.wait?.terms.map((t) => t.name) ?? [];
      for (const term of Object.keys(value.wait ?? {})) {
        if (terms.includes(term)) continue;
        const guess = didYouMean(term, terms);
        this.reporter.report(
          'test-unknown-task',
          `task "${base}" has no wait term "${term}"`,
          { path: [...path, 'wait', term], at: 'key' },
          guess ? `did you mean "${guess}"?` : terms.length ? `its terms: ${terms.join(', ')}` : 'the task has no wait',
        );
      }
    }
  }

  /** The schedules a test runs, and those its expected runs name, are the workflow's. */
  private scheduleNamed(name: string, path: Path): void {
    if (this.schedules.includes(name)) return;
    const guess = didYouMean(name, this.schedules);
    this.reporter.report(
      'test-schema',
      `${this.raw.workflow} has no schedule "${name}"`,
      { path },
      guess ? `did you mean "${guess}"?` : this.schedules.length ? `its schedules: ${this.schedules.join(', ')}` : `${this.raw.workflow} declares no schedules`,
    );
  }
}
