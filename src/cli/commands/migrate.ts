import { join } from 'node:path';
import { lockHolder, migrate } from '../../runtime/index.js';
import { parse } from '../args.js';
import { braidDir, databaseUrl, openDatabase } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { schemaName } from '../project.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.migrate;

export const help = `Apply braid's database migrations (each once, in order; safe when processes start together).

Usage: ${usage}

  --database URL   Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME    the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['database', 'schema'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`migrate takes no arguments (usage: ${usage})`);
  const holder = databaseUrl(io, values.database) ? undefined : lockHolder(join(braidDir(io), 'db'));
  if (holder !== undefined) {
    io.stdout(`the embedded database is held by process ${holder}, which migrated it on start\n`);
    return EXIT.ok;
  }
  const db = await openDatabase(io, { url: values.database, schema: values.schema, fromImage: false });
  try {
    const applied = await migrate(db, schemaName(io, values.schema) ?? 'braid');
    io.stdout(applied.length > 0 ? applied.map((m) => `applied ${m}\n`).join('') : 'up to date\n');
  } finally {
    await db.close();
  }
  return EXIT.ok;
}
