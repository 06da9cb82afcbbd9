/**
 * A workflow test file (`*.test.yaml`, SPEC "Workflow tests"): parsed with positions like a definition, checked
 * against schema/test.schema.json (rule `test-schema`), and read into the typed model the runner uses. Never
 * throws on bad input: every problem is a diagnostic at its file:line:col.
 */
import type { ErrorObject } from 'ajv';
import { type Diagnostic, didYouMean } from '../compiler/diagnostics.js';
import { durationRangeProblem, parseDuration } from '../compiler/duration.js';
import { parseSource, type RawSource } from '../compiler/parse.js';
import { testSchemaValidator } from '../compiler/schemas.js';
import { locate, type Path, type Reporter, type SourceFile } from '../compiler/source.js';
import type { PauseScope } from '../runtime/wire/index.js';

export const DEFAULT_NOW = '2026-01-01T00:00:00Z';
export const DEFAULT_MAX_TIME_MS = 30 * 86_400_000;

export interface Mock {
  output?: unknown;
  error?: string;
  fail?: number;
  delay_ms?: number;
  handler?: 'real';
  /** The failures' error code. */
  code?: string;
  /** false: the error is not retried (a NonRetryableError). */
  retry?: false;
}

export type TaskExpect = string | { state?: string; attempts?: number; args?: unknown; output?: unknown; wait?: Record<string, boolean>; logs?: LogExpect[] };

/** A line a task's handler wrote: its message, or its level and message. */
export type LogExpect = string | { level?: 'debug' | 'info' | 'warn' | 'error'; message: string };

export interface Expect {
  state?: string;
  reason?: string | null;
  output?: unknown;
  tasks?: Record<string, TaskExpect>;
  time?: string;
  /** The runs the schedules started, oldest tick first. */
  runs?: RunExpect[];
  /** Every attempt's start, in order (a child's task as WORKFLOW.TASK). */
  started?: string[];
  /** The runs the test's events started, in order. */
  triggered?: TriggeredExpect[];
}

/** A run an event started: its workflow, and its business key and state where given. */
export interface TriggeredExpect {
  workflow: string;
  id?: string;
  state?: string;
}

/** A run a schedule started: its schedule, its nominal tick (UTC), and its state when given. */
export interface RunExpect {
  schedule: string;
  time: string;
  state?: string;
}

export type Step =
  | { kind: 'advance'; ms: number; line: number }
  | { kind: 'signal'; key: string; payload: unknown; idempotency_key?: string; source?: unknown; line: number }
  | { kind: 'emit'; event: string; payload: unknown; id?: string; line: number }
  | { kind: 'callback'; task: string; term: string; recipient?: string; body: unknown; line: number }
  | { kind: 'expect'; expect: Expect; line: number }
  | { kind: 'cancel'; line: number }
  | { kind: 'pause' | 'resume'; scope: PauseScope; target: string; line: number }
  | { kind: 'retry'; mode: 'all' | 'failed_only' | 'failed_and_downstream'; line: number };

export interface KnownOutcome {
  id: string;
  name: string;
  state: 'completed' | 'failed' | 'cancelled';
  output: unknown;
}

export interface TestCase {
  name: string;
  index: number;
  /** Undefined: the test starts nothing itself (its schedules do). */
  inputs: unknown;
  /** The schedules that run on the virtual clock: all of the workflow's, or these. */
  schedules?: true | string[];
  /** The file's mocks with the test's own over them. */
  mocks: Record<string, Mock>;
  workflows: KnownOutcome[];
  steps: Step[];
  expect?: Expect;
  /** Where the test and its final expect are (1-based lines), for reports and annotations. */
  line: number;
  expectLine?: number;
}

export interface TestFile {
  path: string;
  workflow: string;
  now: Date;
  maxTimeMs: number;
  /** Slots per queue of the test's worker (the file's `queues`; 16 for any other). */
  queues: Record<string, number>;
  tests: TestCase[];
  source: SourceFile;
}

export interface LoadedTestFile {
  /** The model, when the file has no error (warnings allowed). */
  file?: TestFile;
  /** The plain value as parsed (for the checks against definitions), when it matched the schema. */
  value?: RawTestFile;
  reporter: Reporter;
  diagnostics: Diagnostic[];
}

/** The file as written, once it matched the schema. */
export interface RawTestFile {
  workflow: string;
  now?: string;
  max_time?: string;
  queues?: Record<string, number>;
  mocks?: Record<string, RawMock>;
  tests: {
    name: string;
    inputs?: unknown;
    schedules?: boolean | string[];
    mocks?: Record<string, RawMock>;
    workflows?: KnownOutcome[];
    steps?: Record<string, unknown>[];
    expect?: Expect;
  }[];
}

interface RawMock {
  output?: unknown;
  error?: string;
  fail?: number;
  delay?: string;
  handler?: 'real';
  code?: string;
  retry?: false;
}

/** Parses and schema-checks one test file. */
export function loadTestFile(raw: RawSource): LoadedTestFile {
  const { file, reporter, value } = parseSource(raw);
  const done = (extra: Partial<LoadedTestFile> = {}): LoadedTestFile => ({ reporter, diagnostics: reporter.diagnostics, ...extra });
  if (reporter.errorCount > 0) return done();
  if (value === null || value === undefined) {
    reporter.report('test-schema', 'the test file is empty: it needs "workflow" and "tests"', { path: [] });
    return done();
  }
  const validate = testSchemaValidator();
  if (!validate(value)) {
    const said = new Set<string>();
    for (const e of relevant(validate.errors ?? [])) {
      const { message, path, hint, at } = describe(e);
      // each branch of a step's oneOf finds the same unknown key: it is said once
      const key = `${message}\u0000${JSON.stringify(path)}`;
      if (said.has(key)) continue;
      said.add(key);
      reporter.report('test-schema', message, { path, at }, hint);
    }
    return done();
  }
  const rawFile = value as RawTestFile;
  checkBounds(rawFile, reporter);
  if (reporter.errorCount > 0) return done();
  return done({ value: rawFile, file: toModel(rawFile, file) });
}

/** The most steps one test may take: a file of 200,000 steps would run for minutes before saying anything. */
export const MAX_STEPS = 10_000;

/** What the schema cannot say: durations that would leave the date range, and tests too long to run. */
function checkBounds(raw: RawTestFile, reporter: Reporter): void {
  const duration = (text: string | undefined, path: Path) => {
    const problem = text === undefined ? undefined : durationRangeProblem(text);
    if (problem) reporter.report('test-schema', problem, { path }, 'durations go up to 100 years');
  };
  const mocks = (m: Record<string, RawMock> | undefined, path: Path) => {
    for (const [name, mock] of Object.entries(m ?? {})) duration(mock.delay, [...path, name, 'delay']);
  };
  duration(raw.max_time, ['max_time']);
  mocks(raw.mocks, ['mocks']);
  raw.tests.forEach((t, i) => {
    mocks(t.mocks, ['tests', i, 'mocks']);
    const steps = t.steps ?? [];
    if (steps.length > MAX_STEPS)
      reporter.report(
        'test-schema',
        `test "${t.name}" has ${steps.length.toLocaleString('en-US')} steps: at most ${MAX_STEPS.toLocaleString('en-US')}`,
        { path: ['tests', i, 'steps'], at: 'key' },
        'split it into several tests',
      );
    for (const [j, step] of steps.entries()) duration(typeof step.advance === 'string' ? step.advance : undefined, ['tests', i, 'steps', j, 'advance']);
  });
}

/** A duration the schema has already checked. */
const durationMs = (text: string): number => parseDuration(text) ?? 0;

function line(file: SourceFile, path: Path): number {
  const [start] = locate(file, path, 'key');
  return file.lineCounter.linePos(start).line;
}

function toMock(m: RawMock): Mock {
  const out: Mock = {};
  if ('output' in m) out.output = m.output;
  if (m.error !== undefined) out.error = m.error;
  if (m.fail !== undefined) out.fail = m.fail;
  if (m.delay !== undefined) out.delay_ms = durationMs(m.delay);
  if (m.handler !== undefined) out.handler = m.handler;
  if (m.code !== undefined) out.code = m.code;
  if (m.retry === false) out.retry = false;
  return out;
}

const mocksOf = (m: Record<string, RawMock> | undefined) => Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, toMock(v)]));

function toModel(raw: RawTestFile, file: SourceFile): TestFile {
  const shared = mocksOf(raw.mocks);
  return {
    path: file.path,
    workflow: raw.workflow,
    now: new Date(raw.now ?? DEFAULT_NOW),
    maxTimeMs: raw.max_time === undefined ? DEFAULT_MAX_TIME_MS : durationMs(raw.max_time),
    queues: raw.queues ?? {},
    source: file,
    tests: raw.tests.map((t, index) => ({
      name: t.name,
      index,
      // with schedules and no inputs the test starts nothing itself
      inputs: t.inputs ?? (t.schedules || (t.steps ?? []).some((s) => 'emit' in s) ? undefined : {}),
      ...(t.schedules ? { schedules: t.schedules } : {}),
      mocks: { ...shared, ...mocksOf(t.mocks) },
      workflows: (t.workflows ?? []).map((w) => ({ ...w, output: w.output ?? null })),
      steps: (t.steps ?? []).map((s, i) => toStep(s, line(file, ['tests', index, 'steps', i]))),
      ...(t.expect !== undefined ? { expect: t.expect, expectLine: line(file, ['tests', index, 'expect']) } : {}),
      line: line(file, ['tests', index]),
    })),
  };
}

function toStep(s: Record<string, unknown>, at: number): Step {
  if ('advance' in s) return { kind: 'advance', ms: durationMs(s.advance as string), line: at };
  if ('signal' in s) {
    const sig = s.signal as { key: string; payload?: unknown; idempotency_key?: string; source?: unknown };
    return { kind: 'signal', key: sig.key, payload: sig.payload ?? null, idempotency_key: sig.idempotency_key, source: sig.source, line: at };
  }
  if ('emit' in s) {
    const e = s.emit as { event: string; payload?: unknown; id?: string };
    return { kind: 'emit', event: e.event, payload: e.payload ?? null, ...(e.id !== undefined ? { id: e.id } : {}), line: at };
  }
  if ('callback' in s) {
    const c = s.callback as { task: string; term: string; recipient?: string; body?: unknown };
    return { kind: 'callback', task: c.task, term: c.term, ...(c.recipient !== undefined ? { recipient: c.recipient } : {}), body: c.body ?? null, line: at };
  }
  if ('expect' in s) return { kind: 'expect', expect: s.expect as Expect, line: at };
  if ('cancel' in s) return { kind: 'cancel', line: at };
  for (const kind of ['pause', 'resume'] as const) {
    if (!(kind in s)) continue;
    const [scope, target] = Object.entries(s[kind] as Record<PauseScope, string>)[0] as [PauseScope, string];
    return { kind, scope, target, line: at };
  }
  const retry = s.retry as true | { mode?: string };
  const mode = (retry === true ? 'all' : (retry.mode ?? 'all')).replaceAll('-', '_') as 'all' | 'failed_only' | 'failed_and_downstream';
  return { kind: 'retry', mode, line: at };
}

/** One error per place: a oneOf reports the branch that fits best, not every branch. */
function relevant(errors: ErrorObject[]): ErrorObject[] {
  // a step whose kind is known (its key's branch found a problem inside it: `advance: 2 days`) says that problem
  const known = new Map<string, ErrorObject[]>();
  for (const e of errors) {
    const m = /^(\/tests\/\d+\/steps\/\d+)\/([^/]+)/.exec(e.instancePath);
    if (m && STEP_KEYS.includes(m[2]) && e.keyword !== 'additionalProperties') known.set(m[1], [...(known.get(m[1]) ?? []), e]);
  }
  if (known.size > 0) {
    const unknownStep = (e: ErrorObject) => [...known.keys()].some((p) => e.instancePath === p || e.instancePath.startsWith(`${p}/`));
    return [...relevant(errors.filter((e) => !unknownStep(e))), ...[...known.values()].flat()];
  }
  const oneOf = new Set(errors.filter((e) => e.keyword === 'oneOf').map((e) => e.instancePath));
  const inside = (e: ErrorObject) => [...oneOf].some((p) => e.instancePath === p || e.instancePath.startsWith(`${p}/`));
  const kept = errors.filter(
    (e) => e.keyword !== 'if' && e.propertyName === undefined && (!inside(e) || e.keyword === 'oneOf' || e.keyword === 'additionalProperties'),
  );
  // a step with one unknown key says that, rather than "must match exactly one schema"
  return kept.filter(
    (e) =>
      !(
        e.keyword === 'oneOf' &&
        kept.some((o) => o !== e && o.keyword === 'additionalProperties' && o.instancePath === e.instancePath && isStepPath(e.instancePath))
      ),
  );
}

const isStepPath = (p: string) => /^\/tests\/\d+\/steps\/\d+$/.test(p);

const STEP_KEYS = ['advance', 'signal', 'emit', 'callback', 'expect', 'cancel', 'pause', 'resume', 'retry'];

function describe(e: ErrorObject): { message: string; path: Path; hint?: string; at?: 'key' | 'value' } {
  const path: Path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  const where = path.length > 0 ? path.join('.') : 'the test file';
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(e.params.additionalProperty);
      const known = isStepPath(e.instancePath) ? STEP_KEYS : Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      const guess = didYouMean(key, known);
      return {
        message: `${where}: unknown key "${key}"`,
        path: [...path, key],
        at: 'key',
        hint: guess ? `did you mean "${guess}"?` : known.length ? `allowed keys: ${known.join(', ')}` : undefined,
      };
    }
    case 'required':
      return { message: `${where}: missing required key "${String(e.params.missingProperty)}"`, path, at: path.length > 0 ? 'key' : 'value' };
    case 'oneOf':
      if (path.includes('logs')) return { message: `${where}: a log line is a message, or { level, message }`, path };
      return isStepPath(e.instancePath)
        ? { message: `${where}: a step is one of advance, signal, expect, cancel, retry`, path }
        : { message: `${where}: a task's expectation is a state, or { state, attempts, args, output, wait, logs }`, path };
    case 'enum':
      return { message: `${where}: must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, path };
    case 'not':
      return {
        message: `${where}: a mock is one of { output }, { error, code, retry: false }, { fail, code, output }, { delay, output } or { handler: real }`,
        path,
      };
    case 'pattern':
      if (/duration|advance|max_time|delay/.test(String(path.at(-1))))
        return {
          message: `${where}: invalid duration ${JSON.stringify(e.data)}`,
          path,
          hint: 'durations look like 250ms, 30s, 15m, 2h, 7d, 1h30m or ISO 8601 PT30M',
        };
      return { message: `${where}: must match ${String(e.params.pattern)}`, path };
    default:
      return { message: `${where}: ${e.message ?? 'invalid'}`, path };
  }
}
