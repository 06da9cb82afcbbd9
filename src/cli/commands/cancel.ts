import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.cancel;

export const help = `Cancel a workflow: tasks not yet final are cancelled; running handlers are asked to stop
(they may still finish). Says which tasks were cancelled and which are asked to stop (--json: as JSON).

Usage: ${usage}

  --json            { "cancelled": [...], "stopping": [...] }
  --actor NAME      who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT     why, kept with the audit line
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['database', 'schema', 'actor', 'reason'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`cancel takes one workflow ID (usage: ${usage})`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    const result = await backend.cancel(positionals[0]);
    if (flags.has('json')) io.stdout(`${JSON.stringify(result)}\n`);
    else {
      const list = (names: string[]) => (names.length > 0 ? names.join(', ') : 'none');
      io.stdout(`cancelled workflow ${positionals[0]}: tasks cancelled: ${list(result.cancelled)}; still running, asked to stop: ${list(result.stopping)}\n`);
    }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
