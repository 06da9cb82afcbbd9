import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';
import { outcomeText } from './emit.js';

export const usage = USAGE.events;

export const help = `List recent events, newest first, with what each started (braid status ID shows a run's event).

Usage: ${usage}

  --name EVENT            only events of this name
  --limit N               at most N events (default 20, at most 500)
  --json                  print the events as JSON
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['name', 'limit', 'database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`events takes no arguments (usage: ${usage})`);
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError('--limit must be a whole number from 1 to 500');
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const events = await backend.listEvents({ name: values.name, limit });
    if (flags.has('json')) io.stdout(`${JSON.stringify(events)}\n`);
    else if (events.length === 0) io.stdout('no events\n');
    else
      for (const e of events) {
        io.stdout(`${new Date(e.at).toISOString()}  ${e.name}  ${e.event_id}\n`);
        for (const o of e.outcomes) io.stdout(`  ${outcomeText(o)}\n`);
      }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
