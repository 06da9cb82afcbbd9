import type { BulkCreated, BulkRequest } from '../../runtime/index.js';
import { type BulkAction, type BulkOperation, bulkText, DEFAULT_RETRY_MODE } from '../../runtime/wire/index.js';
import { actorName } from '../actor.js';
import { oneOf, parse } from '../args.js';
import { type Backend, openBackend } from '../backend.js';
import { readJson } from '../inputs.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';
import { SEARCH_FLAGS, searchFrom } from './list.js';

export const usage = USAGE.bulk;

export const help = `Act on every workflow a filter selects, as one named operation (an incident's repair):

  retry|cancel|upgrade|signal [filters] --as NAME [--dry-run] [--rate N/s] [action options]
  list                     the operations, newest first
  status NAME              one operation: how far it is
  cancel NAME              stop an operation: the workflows it has not acted on are left as they are

The selection is frozen when the operation is made; each workflow is acted on once, its outcome recorded with
the action, so a run stopped at any point (Ctrl-C, a crash) is continued by running the same command again, or
by the leader of a worker, without acting on any workflow twice. The same command again touches nothing new.

Usage: ${usage}

Filters (those of braid list): --state, --name, --version HASH, --id-prefix, --input PATH=VALUE (repeatable),
  --error TEXT, --created-after ISO, --created-before ISO, --finalized-after ISO, --finalized-before ISO,
  --parent ID, --top-level; and --where CEL over each workflow's id, name, state, version, inputs, error and
  created_at (ISO text; numbers in inputs are doubles: int(inputs.n) % 2 == 0).

  --as NAME         the operation's name (INC-42): running it again continues it (default: a new name)
  --dry-run         print how many workflows it selects and the first ids; change nothing
  --rate N/s        at most N workflows a second (N/m: a minute)
  --mode MODE       retry: failed-and-downstream (default: what failed and what it held back), failed-only,
                    or all (re-runs completed tasks and their side effects too)
  --on-current      retry: on the current version
  --reset-history   retry: clear the retried tasks' attempts and errors
  --to HASH         upgrade: the version to move to (default: each one's current)
  --cancel-removed  upgrade: cancel removed tasks that have not ended
  --drop-evidence   upgrade: move workflows whose waits would lose evidence
  --key K           signal: the key
  --payload JSON    signal: the payload (inline JSON or @file; default null)
  --reason TEXT     why (recorded with the operation)
  --actor NAME      who acts (default: BRAID_ACTOR, else the OS user)
  --json            the operation (or the dry run) as JSON
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

const ACTIONS: readonly BulkAction[] = ['retry', 'cancel', 'upgrade', 'signal'];
const OPTIONS = ['as', 'rate', 'where', 'mode', 'to', 'key', 'payload', 'reason', 'actor', 'database', 'schema'];
const FLAGS = ['dry-run', 'on-current', 'reset-history', 'cancel-removed', 'drop-evidence', 'json', 'top-level'];

/** `200/s`, `200` (a second) or `600/m` as workflows a second. */
export function parseRate(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(?:\/(s|m))?$/.exec(text.trim());
  const n = m ? Number(m[1]) / (m[2] === 'm' ? 60 : 1) : Number.NaN;
  if (!(n > 0 && n <= 10_000)) throw new UsageError(`--rate is N/s or N/m, more than 0 and at most 10000 a second, not "${text}"`);
  return n;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, lists, help: wantsHelp, positionals } = parse(argv, [...SEARCH_FLAGS, ...OPTIONS], usage, FLAGS, ['input']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  const [verb, name, ...rest] = positionals;
  const json = flags.has('json');
  if ((verb === 'status' || verb === 'cancel') && name !== undefined && rest.length === 0) {
    return withBackend(io, values, async (b) => {
      const op = verb === 'status' ? await b.bulkGet(name) : await b.bulkCancel(name, { actor: actorName(values.actor), reason: values.reason });
      io.stdout(json ? `${JSON.stringify(op)}\n` : `${bulkText(op)}\n`);
      return EXIT.ok;
    });
  }
  if (verb === 'list' && name === undefined) {
    return withBackend(io, values, async (b) => {
      const ops = await b.bulkList();
      io.stdout(json ? `${JSON.stringify({ operations: ops })}\n` : ops.length === 0 ? 'no bulk operations\n' : `${ops.map(bulkText).join('\n')}\n`);
      return EXIT.ok;
    });
  }
  if (!ACTIONS.includes(verb as BulkAction) || name !== undefined)
    throw new UsageError(`bulk takes retry, cancel, upgrade or signal with filters, or list, status NAME, cancel NAME (usage: ${usage})`);
  const request = requestFrom(verb as BulkAction, values, flags, lists.input, io);
  return withBackend(io, values, (b) => (flags.has('dry-run') ? dryRun(io, b, request, json) : act(io, b, request, json)));
}

function requestFrom(action: BulkAction, values: Record<string, string | undefined>, flags: Set<string>, inputs: string[], io: Io): BulkRequest {
  const options: Record<string, unknown> = {};
  if (action === 'retry') {
    options.mode = oneOf(values.mode, ['all', 'failed-only', 'failed-and-downstream'], '--mode', DEFAULT_RETRY_MODE.replaceAll('_', '-')).replaceAll('-', '_');
    options.on_current = flags.has('on-current');
    options.reset_history = flags.has('reset-history');
  }
  if (action === 'upgrade') Object.assign(options, { to: values.to, cancel_removed: flags.has('cancel-removed'), drop_evidence: flags.has('drop-evidence') });
  if (action === 'signal')
    Object.assign(options, { key: values.key, payload: values.payload === undefined ? null : readJson(io, values.payload, '--payload') });
  return {
    action,
    filter: searchFrom(values, inputs, flags.has('top-level')),
    where: values.where,
    name: values.as,
    dryRun: flags.has('dry-run'),
    ratePerS: values.rate === undefined ? undefined : parseRate(values.rate),
    options,
    actor: actorName(values.actor),
    reason: values.reason,
  };
}

async function withBackend(io: Io, values: Record<string, string | undefined>, fn: (b: Backend) => Promise<number>): Promise<number> {
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    return await fn(backend);
  } finally {
    await backend.close();
  }
}

async function dryRun(io: Io, b: Backend, request: BulkRequest, json: boolean): Promise<number> {
  const preview = await b.bulkCreate(request);
  if (json) io.stdout(`${JSON.stringify(preview)}\n`);
  else io.stdout(previewText(preview));
  return EXIT.ok;
}

function previewText(p: BulkCreated): string {
  const more = p.total > p.first_ids.length ? ` (and ${p.total - p.first_ids.length} more)` : '';
  const lines = [
    `${p.name} would ${p.action} ${p.total} workflow${p.total === 1 ? '' : 's'}${p.first_ids.length > 0 ? `: ${p.first_ids.join(', ')}${more}` : ''}`,
  ];
  if (p.unevaluated > 0) lines.push(`${p.unevaluated} left out: --where could not be evaluated on them (${p.first_error})`);
  return `${lines.join('\n')}\n`;
}

/** Makes the operation (or finds it, made by the same command before) and acts on it to its end, with its progress. */
async function act(io: Io, b: Backend, request: BulkRequest, json: boolean): Promise<number> {
  const made = await b.bulkCreate(request);
  const stop = new AbortController();
  const interrupted = () => stop.abort();
  process.once('SIGINT', interrupted);
  let shown = -1;
  const progress = (op: BulkOperation) => {
    const at = op.done + op.failed;
    if (io.isTTY && !json) io.stdout(`\r${bar(op)}`);
    else if (!json && Math.floor((at * 10) / Math.max(op.total, 1)) !== shown)
      io.stdout(`${op.name}: ${at}/${op.total} (${op.done} done, ${op.failed} failed)\n`);
    shown = Math.floor((at * 10) / Math.max(op.total, 1));
  };
  try {
    if (made.existing && !json) io.stdout(`${made.name} exists: continuing it (nothing it acted on is acted on again)\n`);
    const op = await b.bulkRun(made.name, progress, stop.signal);
    if (io.isTTY && !json) io.stdout('\n');
    if (json) io.stdout(`${JSON.stringify(op)}\n`);
    else if (op.state === 'running') io.stdout(`${op.name} stopped at ${op.done + op.failed}/${op.total}: run the same command again to continue it\n`);
    else io.stdout(`${bulkText(op)}${op.failed > 0 ? ` (braid bulk status ${op.name}; braid list shows them)` : ''}\n`);
    return op.failed > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    process.off('SIGINT', interrupted);
  }
}

/** `INC-42 retry [##########----------] 500/1000, 0 failed`. */
function bar(op: BulkOperation): string {
  const at = op.done + op.failed;
  const filled = Math.round((20 * at) / Math.max(op.total, 1));
  return `${op.name} ${op.action} [${'#'.repeat(filled)}${'-'.repeat(20 - filled)}] ${at}/${op.total}, ${op.failed} failed`;
}
