import { createRuntime, type RotationProgress } from '../../runtime/index.js';
import { actorName } from '../actor.js';
import { parse } from '../args.js';
import { openDatabase } from '../backend.js';
import { commandFailure, EXIT, type Io, UsageError } from '../io.js';
import { dataKeyOptions, schemaName } from '../project.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.keys;

export const help = `Rotate the data keys sensitive values are encrypted with: every value sealed under an older key is
re-encrypted under the current one (the first of BRAID_KEYS, or the config's keys:), one workflow per
transaction. Run it after putting a new key first; keep the older keys configured until it ends. Stopped or
killed, a rerun finds only what is left. Writes one audit line.

Usage: ${usage}

  rotate            re-encrypt every sealed value under the current key
  --actor NAME      who rotates, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT     why, kept with the audit line
  --json            print { scanned, resealed, values }
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['actor', 'reason', 'database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1 || positionals[0] !== 'rotate') throw new UsageError(`keys takes rotate (usage: ${usage})`);
  const keys = dataKeyOptions(io).keys;
  if (!keys) throw new UsageError("no data keys to rotate to: set BRAID_KEYS (or the config's keys:), the new key first");
  const db = await openDatabase(io, { url: values.database, schema: values.schema });
  try {
    let done: RotationProgress;
    try {
      const rt = createRuntime({ database: db, schema: schemaName(io, values.schema), keys });
      await rt.migrate();
      const tell = (p: RotationProgress) => io.stderr(`braid: ${p.scanned} workflows looked at, ${p.resealed} moved (${p.values} values)\n`);
      done = await rt.keys.rotate({ actor: actorName(values.actor), reason: values.reason, onProgress: flags.has('json') ? undefined : tell });
    } catch (error) {
      throw commandFailure(error);
    }
    io.stdout(flags.has('json') ? `${JSON.stringify(done)}\n` : `rotated: ${done.values} values in ${done.resealed} workflows moved to the current key\n`);
    return EXIT.ok;
  } finally {
    await db.close();
  }
}
