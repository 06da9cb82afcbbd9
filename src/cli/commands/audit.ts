import { auditText } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.audit;

export const help = `Print the audit trail of operator actions (pauses and resumes, task actions, bulk operations), newest
first: when, what, on what, by whom, and why.

Usage: ${usage}

  --actor NAME            only the actions of this actor
  --action ACTION         only this action (pause, task.skip, bulk.retry, ...); bulk.* for a prefix
  --target ID             only the actions on this target or workflow id
  --since ISO             only actions from this time on
  --limit N               at most N lines (default 100, at most 1000)
  --json                  print the lines as JSON
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['actor', 'action', 'target', 'since', 'limit', 'database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`audit takes no arguments (usage: ${usage})`);
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
  if (values.since !== undefined && Number.isNaN(new Date(values.since).getTime()))
    throw new UsageError(`--since must be an ISO 8601 time, not "${values.since}"`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const lines = await backend.audit({ actor: values.actor, action: values.action, target: values.target, since: values.since, limit });
    if (flags.has('json')) io.stdout(`${JSON.stringify(lines)}\n`);
    else if (lines.length === 0) io.stdout('no audit lines\n');
    else for (const l of lines) io.stdout(`${auditText(l)}${l.action.startsWith('bulk.') || l.task ? '' : ` (${l.target})`}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
