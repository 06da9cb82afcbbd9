import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.stream;

export const help = `Print a task's output stream (the chunks its handler wrote with ctx.stream(NAME).write): from the start
of its current attempt, a chunk a line (a string as it is, anything else as JSON). With --follow, waits for
more until the task has ended (a new attempt's chunks follow its predecessor's).

Usage: ${usage}

  --follow                keep printing chunks as they are written, until the task ends
  --json                  one JSON object a line: { attempt, seq, chunk }
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema'], usage, ['follow', 'json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 3) throw new UsageError(`stream takes a workflow ID, a TASK and a stream NAME (usage: ${usage})`);
  const [id, task, name] = positionals;
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const json = flags.has('json');
    const state = await backend.followStream(id, task, name, flags.has('follow'), (c) =>
      io.stdout(`${json ? JSON.stringify(c) : typeof c.chunk === 'string' ? c.chunk : JSON.stringify(c.chunk)}\n`),
    );
    if (state !== null && state !== 'completed') io.stderr(`braid: task ${task} ended ${state}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
