import type { TriggerRun } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { readJson } from '../inputs.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.emit;

export const help = `Emit an event: it is recorded, and every registered workflow whose trigger it matches starts, in one
transaction, each under the business key its trigger gives. An event with an --id that was emitted before is
a delivery again: it starts nothing (exit 0, "duplicate"). A payload its event's schema (braid.config.yaml
events:) refuses is an error (exit 1) and records nothing. Says what each trigger did.

Usage: ${usage}

  --payload JSON          the payload (inline JSON or @file; default null)
  --id EVENT_ID           the event's own id (default: a new one): the same id again starts nothing
  --json                  print the event as recorded, with each trigger's outcome, as JSON
  --actor NAME            who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT           why, kept with the audit line
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['payload', 'id', 'database', 'schema', 'actor', 'reason'], usage, ['json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`emit takes an EVENT name (usage: ${usage})`);
  const payload = values.payload === undefined ? null : readJson(io, values.payload, '--payload');
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    const r = await backend.emitEvent(positionals[0], payload, values.id);
    if (flags.has('json')) io.stdout(`${JSON.stringify(r)}\n`);
    else {
      io.stdout(`${r.duplicate ? 'already recorded' : 'recorded'} event ${r.event.name} ${r.event.event_id}\n`);
      if (r.duplicate) io.stderr('braid: duplicate: this event id was emitted before; it started nothing now\n');
      for (const o of r.duplicate ? [] : r.event.outcomes) io.stdout(`  ${outcomeText(o)}\n`);
      if (!r.duplicate && r.event.outcomes.length === 0) io.stdout('  no registered workflow is triggered by it\n');
    }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

export function outcomeText(o: TriggerRun): string {
  const head = `${o.workflow} (trigger ${o.trigger + 1}):`;
  switch (o.outcome) {
    case 'started':
      return `${head} started ${o.id}`;
    case 'existing':
      return `${head} ${o.id} was already started by its business key`;
    case 'not_matched':
      return `${head} where is false`;
    case 'failed':
      return `${head} failed: ${o.error}`;
  }
}
