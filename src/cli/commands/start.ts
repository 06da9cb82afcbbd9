import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { readInputs } from '../inputs.js';
import { EXIT, UsageError, type Io } from '../io.js';

export const usage = 'braid start NAME [--inputs JSON|@file] [--wait] [--definitions DIR] [--database URL]';

export const help = `Register the definitions folder, then start a workflow from the current version of NAME.
Prints the workflow id alone on one line; with --wait, then waits and prints its output as JSON.

Usage: ${usage}

  --inputs JSON       start inputs as JSON, or @path to read them from a file (default: {})
  --wait              wait until the workflow ends; exit 1 when it failed or was cancelled
  --timeout DURATION  give up waiting after this many seconds (default: wait as long as it takes)
  --definitions DIR   the definitions folder registered first (default: definitions)
  --database URL      Postgres (default: DATABASE_URL; else the embedded database in .braid/)
  --schema NAME       the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['inputs', 'definitions', 'database', 'schema', 'timeout'], usage, ['wait']);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError(`start takes one workflow NAME (usage: ${usage})`);
  const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeout !== undefined && !(timeout > 0)) throw new UsageError('--timeout must be a positive number of seconds');
  const inputs = readInputs(io, values.inputs);
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    if (flags.has('wait') && !backend.remote && !values.database && !process.env.DATABASE_URL) {
      throw new UsageError('--wait needs a running `braid worker` (or `braid dev`) for the embedded database: start one, then run this again');
    }
    const id = await backend.start(positionals[0], inputs, values.definitions ?? 'definitions');
    io.stdout(`${id}\n`);
    if (!flags.has('wait')) return EXIT.ok;
    const w = await backend.waitFinal(id, timeout !== undefined ? timeout * 1000 : 365 * 24 * 3_600_000);
    if (w.state === 'running') {
      io.stderr(`braid: workflow ${id} is still running after ${values.timeout} s\n`);
      return EXIT.failed;
    }
    if (w.state !== 'completed') {
      io.stderr(`braid: workflow ${id} ended ${w.state}\n`);
      return EXIT.failed;
    }
    io.stdout(`${JSON.stringify(w.output)}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
