import prettyMs from 'pretty-ms';
import type { ScheduleRecord } from '../../runtime/wire/index.js';
import { humanDuration } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, SubjectError, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.schedules;

export const help = `List the deployed schedules (of one workflow, when NAME is given): the clock, the policies, whether
paused, the next ticks in UTC and in the schedule's time zone, and the last tick with what it did and its run.

Usage: ${usage}

  --next N          how many next ticks to show (default 3, at most 1000)
  --json            [{ "workflow", "name", "cron" | "every_ms", "timezone", "overlap", "paused", "next_ticks": [{ "time",
                    "local", "fire_at" }], "last_tick", "last_outcome", "last_run_id", "recent_runs", ... }]
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema', 'next'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 1) throw new UsageError(`schedules takes at most one workflow NAME (usage: ${usage})`);
  const next = values.next === undefined ? 3 : Number(values.next);
  if (!/^[0-9]{1,4}$/.test(values.next ?? '3') || next > 1000) throw new UsageError('--next is a whole number up to 1000');
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const schedules = await backend.schedules(positionals[0], { next, runs: 5 });
    if (positionals[0] !== undefined && schedules.length === 0)
      throw new SubjectError(`workflow "${positionals[0]}" has no deployed schedules (register a version that declares some)`);
    if (flags.has('json')) io.stdout(`${JSON.stringify(schedules, null, 2)}\n`);
    else if (schedules.length === 0) io.stdout('no schedules are deployed\n');
    else io.stdout(`${schedules.map(scheduleText).join('\n')}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** One schedule as lines: its clock and policies, its last tick, its next ones (UTC and local). */
export function scheduleText(s: ScheduleRecord): string {
  const clock = s.cron !== undefined ? `cron "${s.cron}" ${s.timezone}` : `every ${humanDuration(s.every_ms ?? 0)}`;
  const policies = [
    `overlap ${s.overlap}`,
    s.catchup_ms > 0 ? `catchup ${humanDuration(s.catchup_ms)}` : '',
    s.jitter_ms > 0 ? `jitter ${humanDuration(s.jitter_ms)}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const lines = [`${s.workflow}/${s.name}  ${clock}  ${policies}${s.paused ? '  PAUSED' : ''}`];
  const run = s.last_run_id ? s.recent_runs.find((r) => r.id === s.last_run_id) : undefined;
  if (s.last_outcome === 'triggered') {
    // a manual trigger's run, at the instant it was started
    const at = run ? new Date(run.created_at).toISOString() : 'earlier';
    lines.push(`  last  ${at}  triggered ${s.last_run_id}${run ? ` (${run.state})` : ''} (by hand)`);
  } else if (s.last_tick !== null) {
    const ran = s.last_run_id && s.last_outcome !== 'skipped' && s.last_outcome !== 'buffered';
    const what = `${s.last_outcome ?? ''}${ran ? ` ${s.last_run_id}${run ? ` (${run.state})` : ''}` : ''}`;
    // a tick started a second or more after its time: the leader is not keeping up
    const late = s.last_lag_ms !== null && s.last_lag_ms >= 1000 ? `  (started ${prettyMs(s.last_lag_ms)} late)` : '';
    lines.push(`  last  ${s.last_tick}  ${what}${s.last_error ? `: ${s.last_error}` : ''}${late}`);
  } else lines.push('  last  none yet');
  if (s.missed_ticks > 0)
    lines.push(`  missed  ${s.missed_ticks} tick(s), the last at ${s.missed_at}: the leader fell behind, and they left the catch-up window`);
  if (s.buffered_tick) lines.push(`  buffered  ${s.buffered_tick} (starts when the running run ends)`);
  if (s.next_ticks.length === 0) lines.push('  next  none (the schedule has ended)');
  for (const [i, t] of s.next_ticks.entries())
    lines.push(`  ${i === 0 ? 'next' : '    '}  ${t.time}  local ${t.local}${t.fire_at !== t.time ? `  starts ${t.fire_at}` : ''}`);
  return lines.join('\n');
}
