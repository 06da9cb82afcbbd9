/**
 * Expectations against what a run did, as pure functions: each mismatch is one failure naming the path, what
 * was expected and what was there. Maps match as subsets (the keys given must match); arrays match whole.
 */

import { templateOf } from './mocks.js';
import type { Expect, LogExpect, RunExpect, TaskExpect, TriggeredExpect } from './test-file.js';

/** What a run looks like at one moment, in the terms expectations use. */
export interface Observed {
  state: string;
  reason: string | null;
  output: unknown;
  /** Every task by name (expansions as `ship[p1]`). */
  tasks: Record<string, ObservedTask>;
  time: string;
  /** The runs the schedules started, oldest tick first. */
  runs: ObservedRun[];
  /** Every attempt's start, in order (a child's task as WORKFLOW.TASK). */
  started: string[];
  /** The workflows under test declare flow control: `--update` then writes the order tasks started. */
  flowControlled: boolean;
  /** The tasks that failed (discarded, cancelled), with their last error: what a failing test shows under its diff. */
  failed: FailedTask[];
  /** The runs the test's events started, in order. */
  triggered: { workflow: string; id: string; state: string }[];
}

export interface FailedTask {
  task: string;
  state: string;
  attempts: number;
  error: string | null;
}

export interface ObservedRun {
  schedule: string;
  /** The nominal tick, ISO 8601 UTC. */
  time: string;
  state: string;
}

export interface ObservedTask {
  state: string;
  attempts: number;
  args: unknown;
  output: unknown;
  /** Each wait term's value when the wait resolved, else at its last evaluation. */
  wait: Record<string, boolean>;
  /** The lines its handler wrote (ctx.log), every attempt's, in order. */
  logs: { level: string; message: string }[];
}

export interface Mismatch {
  path: string;
  expected: unknown;
  actual: unknown;
}

/** Whether `actual` has everything `expected` says. */
export function matches(expected: unknown, actual: unknown): boolean {
  if (isMap(expected)) return isMap(actual) && Object.entries(expected).every(([k, v]) => k in actual && matches(v, actual[k]));
  if (Array.isArray(expected)) return Array.isArray(actual) && expected.length === actual.length && expected.every((v, i) => equal(v, actual[i]));
  return equal(expected, actual);
}

function equal(a: unknown, b: unknown): boolean {
  if (isMap(a) || Array.isArray(a)) return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
  return a === b;
}

function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (isMap(v))
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sorted(v[k])]),
    );
  return v;
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every way the observed run differs from an expectation. */
export function compare(expect: Expect, observed: Observed): Mismatch[] {
  const out: Mismatch[] = [];
  if (expect.state !== undefined && expect.state !== observed.state) out.push({ path: 'state', expected: expect.state, actual: observed.state });
  if ('reason' in expect && (expect.reason ?? null) !== observed.reason) out.push({ path: 'reason', expected: expect.reason ?? null, actual: observed.reason });
  if ('output' in expect && !matches(expect.output, observed.output)) out.push({ path: 'output', expected: expect.output, actual: observed.output });
  if (expect.time !== undefined && new Date(expect.time).getTime() !== new Date(observed.time).getTime())
    out.push({ path: 'time', expected: expect.time, actual: observed.time });
  for (const [name, want] of Object.entries(expect.tasks ?? {})) out.push(...compareTask(name, want, observed.tasks));
  if (expect.runs !== undefined) out.push(...compareRuns(expect.runs, observed.runs));
  if (expect.triggered !== undefined) out.push(...compareTriggered(expect.triggered, observed.triggered));
  if (expect.started !== undefined) {
    const at = firstDifference(expect.started, observed.started);
    if (at !== undefined) out.push({ path: `started[${at}]`, expected: expect.started.slice(at, at + 5), actual: observed.started.slice(at, at + 5) });
  }
  return out;
}

/** Where two lists first differ (one ending first counts); undefined when they are the same. */
function firstDifference(a: readonly string[], b: readonly string[]): number | undefined {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return undefined;
}

/** The schedules' runs, one for one in order: the same schedule and tick, and the state where one is given. */
function compareRuns(expected: readonly RunExpect[], actual: readonly ObservedRun[]): Mismatch[] {
  const shown = (r: { schedule: string; time: string; state?: string }) =>
    `${r.schedule} ${new Date(r.time).toISOString().replace('.000Z', 'Z')}${r.state ? ` ${r.state}` : ''}`;
  const out: Mismatch[] = [];
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    const want = expected[i];
    const got = actual[i];
    const same =
      want !== undefined &&
      got !== undefined &&
      want.schedule === got.schedule &&
      new Date(want.time).getTime() === new Date(got.time).getTime() &&
      (want.state === undefined || want.state === got.state);
    if (!same) out.push({ path: `runs[${i}]`, expected: want ? shown(want) : 'no more runs', actual: got ? shown(got) : 'no more runs' });
  }
  return out;
}

/** The runs events started, one for one in order: the same workflow, and the business key and state where given. */
function compareTriggered(expected: readonly TriggeredExpect[], actual: Observed['triggered']): Mismatch[] {
  const shown = (r: TriggeredExpect) => `${r.workflow}${r.id !== undefined ? ` ${r.id}` : ''}${r.state ? ` ${r.state}` : ''}`;
  const out: Mismatch[] = [];
  for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
    const [want, got] = [expected[i], actual[i]];
    const same =
      want && got && want.workflow === got.workflow && (want.id === undefined || want.id === got.id) && (want.state === undefined || want.state === got.state);
    if (!same) out.push({ path: `triggered[${i}]`, expected: want ? shown(want) : 'no more runs', actual: got ? shown(got) : 'no more runs' });
  }
  return out;
}

/** A task by name, or every expansion of a for_each task named without a key. */
function tasksNamed(name: string, tasks: Record<string, ObservedTask>): [string, ObservedTask][] {
  if (tasks[name]) return [[name, tasks[name]]];
  return Object.entries(tasks).filter(([n]) => n !== name && templateOf(n) === name);
}

function compareTask(name: string, want: TaskExpect, tasks: Record<string, ObservedTask>): Mismatch[] {
  const found = tasksNamed(name, tasks);
  const spec = typeof want === 'string' ? { state: want } : want;
  if (found.length === 0) return [{ path: `tasks.${name}`, expected: spec.state ?? 'a task', actual: 'no such task in the run' }];
  const out: Mismatch[] = [];
  for (const [n, t] of found) {
    if (spec.state !== undefined && spec.state !== t.state) out.push({ path: `tasks.${n}.state`, expected: spec.state, actual: t.state });
    if (spec.attempts !== undefined && spec.attempts !== t.attempts) out.push({ path: `tasks.${n}.attempts`, expected: spec.attempts, actual: t.attempts });
    if ('args' in spec && !matches(spec.args, t.args)) out.push({ path: `tasks.${n}.args`, expected: spec.args, actual: t.args });
    if ('output' in spec && !matches(spec.output, t.output)) out.push({ path: `tasks.${n}.output`, expected: spec.output, actual: t.output });
    for (const [term, value] of Object.entries(spec.wait ?? {})) {
      const actual = t.wait[term] ?? false;
      if (actual !== value) out.push({ path: `tasks.${n}.wait.${term}`, expected: value, actual });
    }
    if (spec.logs !== undefined) {
      const missing = firstMissingLine(spec.logs, t.logs);
      if (missing !== undefined)
        out.push({ path: `tasks.${n}.logs[${missing}]`, expected: spec.logs[missing], actual: t.logs.map((l) => `${l.level}: ${l.message}`) });
    }
  }
  return out;
}

/** The first expected line not found, in order, among the lines written (others may come between); undefined when all are. */
function firstMissingLine(expected: readonly LogExpect[], lines: readonly { level: string; message: string }[]): number | undefined {
  let at = 0;
  for (let i = 0; i < expected.length; i++) {
    const want = typeof expected[i] === 'string' ? { message: expected[i] as string } : (expected[i] as { level?: string; message: string });
    while (at < lines.length && !(lines[at].message === want.message && (want.level === undefined || lines[at].level === want.level))) at++;
    if (at === lines.length) return i;
    at++;
  }
  return undefined;
}

/** The final expectation a run would pass, as `--update` writes it: state, reason, output, every task's state, time. */
export function snapshotOf(observed: Observed): Expect {
  const runs = observed.runs.map((r) => ({ schedule: r.schedule, time: r.time.replace('.000Z', 'Z'), state: r.state }));
  const triggered = observed.triggered.length > 0 ? { triggered: observed.triggered } : {};
  if (observed.state === 'none') return { ...(runs.length > 0 ? { runs } : {}), ...triggered, time: observed.time };
  return {
    state: observed.state,
    ...(observed.reason !== null ? { reason: observed.reason } : {}),
    ...(observed.output !== null && observed.output !== undefined ? { output: observed.output } : {}),
    tasks: Object.fromEntries(Object.entries(observed.tasks).map(([n, t]) => [n, t.state])),
    ...(runs.length > 0 ? { runs } : {}),
    ...triggered,
    ...(observed.flowControlled ? { started: observed.started } : {}),
    time: observed.time,
  };
}
