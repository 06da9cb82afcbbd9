import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, SubjectError, UsageError, type Io } from '../io.js';

export const usage = 'braid versions NAME [--json] [--database URL]';

export const help = `List a workflow's registered versions, newest first: hash, when registered, which is current,
and how many running workflows use each.

Usage: ${usage}

  --json            [{ "hash", "registered_at", "current", "running", "file" }]
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema'], usage, ['json']);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError(`versions takes one workflow NAME (usage: ${usage})`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const versions = await backend.versions(positionals[0]);
    if (versions.length === 0) throw new SubjectError(`workflow ${positionals[0]} is not registered; run braid register`);
    if (flags.has('json')) {
      io.stdout(JSON.stringify(versions.map(({ hash, registered_at, current, running, file }) => ({ hash, registered_at, current, running, file })), null, 2) + '\n');
    } else {
      for (const v of versions) {
        io.stdout(`${v.hash.slice(0, 12)}  ${new Date(v.registered_at).toISOString()}  ${v.current ? 'current' : '       '}  ${v.running} running${v.file ? `  ${v.file}` : ''}\n`);
      }
    }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
