import type { UpgradeOutcome, UpgradeReport } from '../../runtime/deploys/upgrades.js';
import { oneOf, parse } from '../args.js';
import { openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.upgrade;

export const help = `Move running workflows to another version of their definition, on purpose: by default every
running workflow of NAME on an older version, to the current version. Each moves in its own transaction under
its lock, or not at all, with the reason. Safe while workers run.

A workflow moves when every task that has started exists in the target version (by name, or by its
renamed_from) with the same kind, or has ended. Tasks not started take the target's definition (args, deps,
wait, when, retry); new tasks are inserted; removed tasks not started are deleted; removed tasks that ended
stay as history (status shows "removed in HASH", their outputs readable); active waits are evaluated again
under the new terms with the signals already received; for_each expansions are kept by key. A removed task
that is retryable refuses the move unless --cancel-removed; a running one refuses until its attempt ends.

Usage: ${usage}

  --from HASH       only workflows on this version (a hash, or a unique prefix as braid versions shows it)
  --to HASH         the version to move to (default: the current one)
  --id ID           only this workflow (repeat for more)
  --dry-run         say what would move and what would not, change nothing
  --cancel-removed  cancel removed tasks that have not ended (not running ones), keeping them as history
  --drop-evidence   move workflows even when an active wait would lose what counted: signals of a key the new
                    version's term no longer counts (renamed_from: OLD_KEY on the term keeps them), timers
                    whose anchor changes
  --format FORMAT   text (default): a line per workflow; json: { "name", "to", "results": [...] }
  --actor NAME      who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT     why, kept with the audit line
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)

Exit status: 0 every workflow moved (or would, or none was behind), 1 some could not move (they are left as
they were) or NAME is unknown, 2 usage, 3 internal or connection error.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    lists,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['from', 'to', 'format', 'database', 'schema', 'actor', 'reason'], usage, ['dry-run', 'cancel-removed', 'drop-evidence'], ['id']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`upgrade takes one workflow NAME (usage: ${usage})`);
  const format = oneOf(values.format, ['text', 'json'] as const, '--format', 'text');
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    const report = await backend.upgrade(positionals[0], {
      from: values.from,
      to: values.to,
      ids: lists.id.length > 0 ? lists.id : undefined,
      dryRun: flags.has('dry-run'),
      cancelRemoved: flags.has('cancel-removed'),
      dropEvidence: flags.has('drop-evidence'),
    });
    io.stdout(format === 'json' ? `${JSON.stringify({ ...report, dry_run: flags.has('dry-run') }, null, 2)}\n` : upgradeText(report, flags.has('dry-run')));
    return report.results.some((r) => r.status === 'skipped') ? EXIT.failed : EXIT.ok;
  } finally {
    await backend.close();
  }
}

function upgradeText(report: UpgradeReport, dryRun: boolean): string {
  const lines = [`${report.name} -> ${report.to.slice(0, 12)}${dryRun ? ' (dry run: nothing changes)' : ''}`];
  for (const r of report.results) lines.push(`  ${r.id}  ${r.from ? r.from.slice(0, 12) : '?'}  ${outcomeText(r)}`);
  if (report.results.length === 0) lines.push('  no running workflow is on another version');
  const count = (status: UpgradeOutcome['status']) => report.results.filter((r) => r.status === status).length;
  const moved = dryRun ? `${count('would_move')} would move` : `${count('moved')} moved`;
  const also = [
    count('current') > 0 ? `, ${count('current')} already on it` : '',
    count('finished') > 0 ? `, ${count('finished')} finished before their turn` : '',
  ];
  lines.push(`${moved}, ${count('skipped')} cannot move${also.join('')}`);
  return `${lines.join('\n')}\n`;
}

function outcomeText(r: UpgradeOutcome): string {
  if (r.status === 'skipped') return `cannot move: ${r.reason}`;
  if (r.status === 'current') return 'already on this version';
  if (r.status === 'finished') return `not moved: ${r.reason}`;
  const changes = [
    ...Object.entries(r.renamed ?? {}).map(([a, b]) => `${a} -> ${b}`),
    ...(r.inserted ?? []).map((n) => `+${n}`),
    ...(r.deleted ?? []).map((n) => `-${n}`),
    ...(r.history ?? []).map((n) => `${n} kept as history`),
    ...(r.cancelled ?? []).map((n) => `${n} cancelled, kept as history`),
    ...(r.dropped ?? []).map((d) => `dropped: ${d}`),
  ];
  return `${r.status === 'moved' ? 'moved' : 'would move'}${changes.length > 0 ? ` (${changes.join(', ')})` : ''}`;
}
