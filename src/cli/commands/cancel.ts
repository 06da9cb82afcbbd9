import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, UsageError, type Io } from '../io.js';

export const usage = 'braid cancel ID [--database URL]';

export const help = `Cancel a workflow: tasks not yet final are cancelled; running handlers are asked to stop
(they may still finish). Prints the affected tasks as JSON.

Usage: ${usage}

  --database URL    Postgres (default: DATABASE_URL; else the embedded database in .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['database', 'schema'], usage);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError(`cancel takes one workflow ID (usage: ${usage})`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    io.stdout(JSON.stringify(await backend.cancel(positionals[0])) + '\n');
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
