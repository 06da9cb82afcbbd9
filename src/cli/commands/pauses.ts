import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';
import { pausesText } from './pause.js';

export const usage = USAGE.pauses;

export const help = `List the pauses in force (braid pause): the scope, who paused it, when, and why.

Usage: ${usage}

  --json            { "pauses": [...] }
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`pauses takes no arguments (usage: ${usage})`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const pauses = await backend.pauses();
    io.stdout(flags.has('json') ? `${JSON.stringify({ pauses })}\n` : pausesText(pauses));
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
