import { renderTemplates, TemplateError } from '../cel/evaluate.js';
import { scalarOffsets } from '../cel/scalar-offsets.js';
import { fromCelValue } from '../cel/types.js';
import { didYouMean, pointer } from '../diagnostics.js';
import { parseDuration } from '../duration.js';
import { type Definition, type ScheduleDef, schedulePath } from '../model.js';
import { normalizeSchedule } from '../normalize.js';
import { cronOf, nextTicks, shortestInterval, tickRunId } from '../schedule/ticks.js';
import { isTimeZone, timeZones } from '../schedule/zone.js';
import { makeUserSchemaAjv } from '../schemas.js';
import { nodeAt, type Reporter } from '../source.js';
import { isTimestamp } from './tasks.js';

/** Business keys are at most 128 characters (SPEC): a tick's key is NAME:SCHEDULE: and a 24-character time. */
const KEY_MAX = 128;
/** The longest ISO time a tick's key can hold: 2027-01-01T00:00:00.000Z. */
const ISO_MAX = 24;
/** Where validation reads a sample tick from, so the same file gives the same diagnostics every day. */
const SAMPLE_FROM = Date.UTC(2027, 0, 1);

/** Rule `schedule`: each schedule's clock, zone, bounds and inputs (the CEL pass checks the inputs' templates). */
export function checkSchedules(def: Definition, reporter: Reporter): void {
  const seen = new Set<string>();
  for (const s of def.schedules) {
    if (s.name !== undefined) {
      if (seen.has(s.name))
        reporter.report('schedule', `schedule "${s.name}" is declared twice`, { path: schedulePath(s, 'name') }, 'schedule names are unique in a workflow');
      seen.add(s.name);
      if (def.name !== undefined && def.name.length + s.name.length + 2 + ISO_MAX > KEY_MAX)
        reporter.report(
          'schedule',
          `schedule "${s.name}": its runs' business key (${def.name}:${s.name}:<time>) would be longer than ${KEY_MAX} characters`,
          { path: schedulePath(s, 'name') },
          'shorten the schedule name',
        );
    }
    checkClock(s, reporter);
  }
}

function checkClock(s: ScheduleDef, reporter: Reporter): void {
  const label = `schedule "${s.name ?? s.index}"`;
  if (s.cron === undefined && s.every === undefined) {
    reporter.report('schedule', `${label} has neither "cron" nor "every"`, { path: schedulePath(s), at: 'value' }, 'add cron: "0 6 * * *" or every: 1h');
    return;
  }
  if (s.cron !== undefined && s.every !== undefined) {
    reporter.report('schedule', `${label} has both "cron" and "every": choose one`, { path: schedulePath(s, 'every'), at: 'key' });
    return;
  }
  let clockOk = true;
  if (s.cron !== undefined) clockOk = checkCron(s, s.cron, label, reporter);
  const every = s.every !== undefined ? parseDuration(s.every) : undefined;
  if (every !== undefined && every < 1000) {
    reporter.report('schedule', `${label}: every ${s.every} is under 1s`, { path: schedulePath(s, 'every') }, 'the shortest interval is 1s');
    clockOk = false;
  }
  if (s.timezone !== undefined && !isTimeZone(s.timezone)) {
    const meant = didYouMean(s.timezone, timeZones());
    reporter.report(
      'schedule',
      `${label}: unknown time zone "${s.timezone}"`,
      { path: schedulePath(s, 'timezone') },
      meant ? `did you mean "${meant}"?` : 'use an IANA name, e.g. Europe/Berlin or America/New_York',
    );
    clockOk = false;
  }
  for (const field of ['start_at', 'end_at'] as const) {
    const v = s[field];
    if (v !== undefined && !isTimestamp(v)) {
      reporter.report(
        'invalid-timestamp',
        `invalid timestamp ${JSON.stringify(v)}`,
        { path: schedulePath(s, field) },
        'use RFC 3339, e.g. 2027-01-01T00:00:00Z',
      );
      clockOk = false;
    }
  }
  if (!clockOk || (s.every !== undefined && every === undefined)) return;
  if (s.start_at !== undefined && s.end_at !== undefined && Date.parse(s.end_at) <= Date.parse(s.start_at)) {
    reporter.report('schedule', `${label}: end_at is not after start_at`, { path: schedulePath(s, 'end_at') });
    return;
  }
  const timing = normalizeSchedule({ ...s, name: s.name ?? '' });
  const first = nextTicks(timing, s.start_at !== undefined ? Date.parse(s.start_at) - 1 : 0, 1)[0];
  if (first === undefined) {
    reporter.report(
      'schedule',
      `${label} never ticks${s.end_at !== undefined ? ' before its end_at' : ''}`,
      { path: schedulePath(s, s.cron !== undefined ? 'cron' : 'every') },
      'a cron line like "0 0 30 2 *" names a date that does not exist',
    );
    return;
  }
  const jitter = s.jitter !== undefined ? parseDuration(s.jitter) : undefined;
  const interval = shortestInterval(timing);
  if (jitter !== undefined && interval !== undefined && jitter > interval)
    reporter.report(
      'schedule',
      `${label}: jitter ${s.jitter} is longer than the ${formatMs(interval)} between its ticks`,
      { path: schedulePath(s, 'jitter') },
      'a jitter under the interval keeps each run before the next tick',
    );
}

/** A cron line croner refuses, said at the field at fault when one alone is. */
function checkCron(s: ScheduleDef, cron: string, label: string, reporter: Reporter): boolean {
  const fields = [...cron.matchAll(/\S+/g)];
  const macro = cron.trim().startsWith('@');
  const problem =
    !macro && (fields.length < 5 || fields.length > 6)
      ? `it has ${fields.length} field${fields.length === 1 ? '' : 's'}, not 5 (or 6 with seconds)`
      : cronProblem(cron);
  if (!problem) return true;
  let at: { index: number; length: number } | undefined;
  if (!macro && (fields.length === 5 || fields.length === 6)) {
    const bad = fields.findIndex((f, i) => cronProblem(fields.map((_, j) => (j === i ? f[0] : '*')).join(' ')) !== undefined);
    if (bad >= 0) at = { index: fields[bad].index, length: fields[bad][0].length };
  }
  const names =
    fields.length === 6 ? ['second', 'minute', 'hour', 'day of month', 'month', 'day of week'] : ['minute', 'hour', 'day of month', 'month', 'day of week'];
  const which = at ? names[fields.findIndex((f) => f.index === at.index)] : undefined;
  const message = which
    ? `${label}: invalid cron ${which} field "${cron.slice(at!.index, at!.index + at!.length)}" (${RANGES[which]})`
    : `${label}: invalid cron line "${cron}": ${problem}`;
  const hint = 'five fields: minute hour day-of-month month day-of-week (six with seconds first), or @hourly, @daily, @weekly, @monthly, @yearly';
  const path = schedulePath(s, 'cron');
  const offsets = at && reporter.file.doc ? scalarOffsets(nodeAt(reporter.file.doc, path), reporter.file.text) : undefined;
  if (at && offsets) reporter.report('schedule', message, { path, span: [offsets[at.index], offsets[at.index + at.length - 1] + 1] }, hint);
  else reporter.report('schedule', message, { path }, hint);
  return false;
}

/** What each field takes (croner's own message counts months from 0). */
const RANGES: Record<string, string> = {
  second: 'seconds are 0-59',
  minute: 'minutes are 0-59',
  hour: 'hours are 0-23',
  'day of month': 'days of the month are 1-31, or L for the last',
  month: 'months are 1-12 or JAN-DEC',
  'day of week': 'days of the week are 0-7 (0 and 7 are Sunday) or SUN-SAT',
};

function cronProblem(cron: string): string | undefined {
  try {
    cronOf(cron);
    return undefined;
  } catch (error) {
    return String((error as Error).message ?? error).replace(/^CronPattern:\s*/, '');
  }
}

function formatMs(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/**
 * A schedule's inputs rendered for a sample tick and checked against the workflow's inputs schema, so a
 * schedule that could never start its workflow is said at validate, not at 06:00 on the first of the month.
 * Run after the other passes, on schedules whose inputs and templates have no error of their own.
 */
export function checkScheduleInputs(def: Definition, reporter: Reporter): void {
  if (def.schedules.length === 0 || hasErrorUnder(reporter, '/inputs') || hasErrorUnder(reporter, '/name')) return;
  let validate: ReturnType<ReturnType<typeof makeUserSchemaAjv>['compile']> | undefined;
  for (const s of def.schedules) {
    if (s.name === undefined || hasErrorUnder(reporter, pointer(schedulePath(s)))) continue;
    const timing = normalizeSchedule(s);
    const time = nextTicks(timing, Math.max(SAMPLE_FROM, s.start_at ? Date.parse(s.start_at) : SAMPLE_FROM), 1)[0] ?? SAMPLE_FROM;
    let inputs: unknown;
    try {
      inputs = fromCelValue(renderTemplates(s.inputs ?? {}, { schedule: { name: s.name, time: new Date(time) } }));
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      reporter.report('schedule', `schedule "${s.name}": inputs: ${error.message}`, { path: schedulePath(s, 'inputs', ...error.path) });
      continue;
    }
    if (def.inputs === undefined) continue;
    validate ??= makeUserSchemaAjv({ useDefaults: true }).compile(def.inputs);
    if (validate(structuredClone(inputs))) continue;
    for (const e of validate.errors ?? []) {
      const where = e.instancePath
        .split('/')
        .slice(1)
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
      const inSchedule = nodeAt(reporter.file.doc!, schedulePath(s, 'inputs', ...where)) ? where : [];
      reporter.report(
        'schedule',
        `schedule "${s.name}": its inputs ${e.instancePath || '(the whole object)'} ${e.message ?? 'do not match the inputs schema'} (the run at ${tickRunId(
          def.name ?? '',
          s.name,
          time,
        )
          .split(':')
          .slice(2)
          .join(':')} could not start)`,
        { path: s.inputs ? schedulePath(s, 'inputs', ...inSchedule) : schedulePath(s, 'name') },
        e.keyword === 'required' ? 'give the schedule the input, or a default in the inputs schema' : undefined,
      );
    }
  }
}

function hasErrorUnder(reporter: Reporter, path: string): boolean {
  return reporter.diagnostics.some((d) => d.severity === 'error' && (d.path === path || d.path.startsWith(`${path}/`)));
}
