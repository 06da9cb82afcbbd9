import type { ScheduleStart } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';
import { scheduleText } from './schedules.js';

export const usage = USAGE.schedule;

export const help = `Operate one schedule of a workflow:

  pause NAME SCHEDULE      no tick starts until it is resumed
  resume NAME SCHEDULE     ticks again from now (the ticks missed while paused do not run)
  trigger NAME SCHEDULE    starts a run now, outside the clock (its key is NAME:SCHEDULE:NOW)
  backfill NAME SCHEDULE --from ISO --to ISO [--dry-run]
                           starts a run for every tick from --from to --to (both included), each with its
                           tick's key: a second backfill of the range starts nothing new

Usage: ${usage}

  --json            the schedule (pause, resume), the run started (trigger), or the runs (backfill), as JSON
  --actor NAME      who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT     why, kept with the audit line
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

const ACTIONS = ['pause', 'resume', 'trigger', 'backfill'] as const;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema', 'from', 'to', 'actor', 'reason'], usage, ['json', 'dry-run']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const [action, workflow, schedule, ...rest] = positionals;
  if (!ACTIONS.includes(action as (typeof ACTIONS)[number])) throw new UsageError(`schedule takes pause, resume, trigger or backfill (usage: ${usage})`);
  if (workflow === undefined || schedule === undefined || rest.length > 0)
    throw new UsageError(`schedule ${action} takes a workflow NAME and a SCHEDULE (usage: ${usage})`);
  const range = action === 'backfill' ? { from: instant(values.from, '--from'), to: instant(values.to, '--to') } : undefined;
  if (!range && (values.from !== undefined || values.to !== undefined || flags.has('dry-run')))
    throw new UsageError('--from, --to and --dry-run are for backfill');
  const json = flags.has('json');
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    if (action === 'pause' || action === 'resume') {
      const s = await backend.schedule(workflow, schedule, action);
      io.stdout(json ? `${JSON.stringify(s, null, 2)}\n` : `${scheduleText(s)}\n`);
    } else if (action === 'trigger') {
      const started = await backend.trigger(workflow, schedule);
      io.stdout(json ? `${JSON.stringify(started)}\n` : `${startText(started)}\n`);
      if (started.status === 'failed') return EXIT.failed;
    } else if (range) {
      if (range.to.getTime() < range.from.getTime()) throw new UsageError('--to is before --from');
      const runs = await backend.backfill(workflow, schedule, range.from, range.to, flags.has('dry-run'));
      if (json) io.stdout(`${JSON.stringify(runs, null, 2)}\n`);
      else {
        for (const r of runs) io.stdout(`${startText(r)}\n`);
        const count = (status: ScheduleStart['status']) => runs.filter((r) => r.status === status).length;
        io.stdout(
          flags.has('dry-run')
            ? `${runs.length} tick(s) in the range; nothing started (--dry-run)\n`
            : `${runs.length} tick(s): ${count('started')} started, ${count('existing')} already there, ${count('failed')} failed\n`,
        );
      }
      if (runs.some((r) => r.status === 'failed')) return EXIT.failed;
    }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

function startText(r: ScheduleStart): string {
  return `${r.time}  ${r.status.replace('_', ' ')}  ${r.id}${r.error ? `: ${r.error}` : ''}`;
}

function instant(text: string | undefined, flag: string): Date {
  if (text === undefined) throw new UsageError(`backfill needs ${flag} (an ISO 8601 time, e.g. 2027-01-01T00:00:00Z)`);
  const d = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw new UsageError(`${flag} ${JSON.stringify(text)} is not an ISO 8601 time (e.g. 2027-01-01T00:00:00Z)`);
  return d;
}
