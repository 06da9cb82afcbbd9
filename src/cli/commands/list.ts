import { SearchParamError, searchFromParams } from '../../api/search-params.js';
import { isFinal, WORKFLOW_STATES, type WorkflowRecord, type WorkflowSearch, type WorkflowSummary } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.list;

export const help = `List recent workflows, newest first, searched by every filter given.

Usage: ${usage}

  --state STATE            running, completed, failed or cancelled
  --name NAME              only workflows of this name
  --version HASH           only workflows on this version (a hash or its prefix)
  --id-prefix P            ids that begin with P (a business key's prefix: refund:r1)
  --input PATH=VALUE       an inputs value (repeatable): --input customer_id=c1, --input customer.tier=gold
  --created-after ISO      created at or after (2026-01-31, 2026-01-31T12:00:00Z)
  --created-before ISO     created before
  --finalized-after ISO    finalized at or after
  --finalized-before ISO   finalized before
  --error TEXT             some task's error (or the output's) contains TEXT, any case
  --top-level              only workflows no start task started
  --parent ID              only the children of workflow ID
  --limit N                how many (default 20, at most 500)
  --json                   { "workflows": [...], "next_cursor" }
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

const STATES: readonly string[] = WORKFLOW_STATES;

/** The search's options (braid bulk takes them too). */
export const SEARCH_FLAGS = [
  'state',
  'name',
  'version',
  'id-prefix',
  'created-after',
  'created-before',
  'finalized-after',
  'finalized-before',
  'error',
  'parent',
] as const;

/**
 * The filters given, read by the API's own reading of a search (the same filters, refused the same way): the
 * state and name as given, --top-level from `topLevel`.
 */
export function searchFrom(values: Record<string, string | undefined>, inputs: readonly string[], topLevel = false): Omit<WorkflowSearch, 'limit'> {
  if (values.state !== undefined && !STATES.includes(values.state)) throw new UsageError(`--state must be one of ${STATES.join(', ')}, not "${values.state}"`);
  const query = new URLSearchParams();
  const flagged: [string, string][] = [
    ['version', 'version'],
    ['id-prefix', 'id_prefix'],
    ['created-after', 'created_after'],
    ['created-before', 'created_before'],
    ['finalized-after', 'finalized_after'],
    ['finalized-before', 'finalized_before'],
    ['error', 'error'],
    ['parent', 'parent_id'],
  ];
  for (const [flag, param] of flagged) if (values[flag] !== undefined) query.set(param, values[flag]);
  for (const i of inputs) query.append('input', i);
  try {
    return {
      ...searchFromParams(query),
      state: values.state as WorkflowRecord['state'] | undefined,
      name: values.name,
      topLevel: topLevel || undefined,
    };
  } catch (error) {
    if (error instanceof SearchParamError)
      throw new UsageError(error.message.replace(/"(\w+)"/, (_, p: string) => `--${p.replace(/_/g, '-').replace('parent-id', 'parent')}`));
    throw error;
  }
}

/** The workflows as a table; the parent column only when some workflow listed has one. */
function table(workflows: readonly WorkflowSummary[]): string {
  const parents = workflows.some((w) => w.parent_id);
  const rows = workflows.map((w) => [
    w.id,
    w.name,
    w.state,
    `${Object.entries(w.task_counts ?? {})
      .filter(([s]) => isFinal(s))
      .reduce((n, [, c]) => n + Number(c), 0)}/${w.tasks_total}`,
    ...(parents ? [w.parent_id ?? '-'] : []),
    new Date(w.created_at).toISOString(),
  ]);
  const header = ['ID', 'NAME', 'STATE', 'DONE', ...(parents ? ['PARENT'] : []), 'CREATED'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const fmt = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return `${[fmt(header), ...rows.map(fmt)].join('\n')}\n`;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    lists,
    help: wantsHelp,
    positionals,
  } = parse(argv, [...SEARCH_FLAGS, 'limit', 'database', 'schema'], usage, ['json', 'top-level'], ['input']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`list takes no arguments (usage: ${usage})`);
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError('--limit must be a whole number from 1 to 500');
  const search = searchFrom(values, lists.input, flags.has('top-level'));
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    const page = await backend.list({ ...search, limit });
    if (flags.has('json')) {
      io.stdout(`${JSON.stringify(page, null, 2)}\n`);
      return EXIT.ok;
    }
    if (page.workflows.length === 0) {
      io.stdout('no workflows\n');
      return EXIT.ok;
    }
    io.stdout(table(page.workflows));
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
