import { isFinal, WORKFLOW_STATES, type WorkflowRecord } from '../../runtime/wire.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.list;

export const help = `List recent workflows, newest first.

Usage: ${usage}

  --state STATE     running, completed, failed or cancelled
  --name NAME       only workflows of this name
  --limit N         how many (default 20, at most 500)
  --json            { "workflows": [...], "next_cursor" }
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

const STATES: readonly string[] = WORKFLOW_STATES;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['state', 'name', 'limit', 'database', 'schema'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`list takes no arguments (usage: ${usage})`);
  if (values.state !== undefined && !STATES.includes(values.state)) throw new UsageError(`--state must be one of ${STATES.join(', ')}, not "${values.state}"`);
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError('--limit must be a whole number from 1 to 500');
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const page = await backend.list({ state: values.state as WorkflowRecord['state'] | undefined, name: values.name, limit });
    if (flags.has('json')) {
      io.stdout(`${JSON.stringify(page, null, 2)}\n`);
      return EXIT.ok;
    }
    if (page.workflows.length === 0) {
      io.stdout('no workflows\n');
      return EXIT.ok;
    }
    const rows = page.workflows.map((w) => [
      w.id,
      w.name,
      w.state,
      `${Object.entries(w.task_counts ?? {})
        .filter(([s]) => isFinal(s))
        .reduce((n, [, c]) => n + Number(c), 0)}/${w.tasks_total}`,
      new Date(w.created_at).toISOString(),
    ]);
    const header = ['ID', 'NAME', 'STATE', 'DONE', 'CREATED'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const fmt = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
    io.stdout(`${[fmt(header), ...rows.map(fmt)].join('\n')}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
