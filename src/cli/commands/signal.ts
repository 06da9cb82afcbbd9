import { parseTraceParent } from '../../runtime/index.js';
import { parse } from '../args.js';
import { openBackend } from '../backend.js';
import { readJson } from '../inputs.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.signal;

export const help = `Emit a signal to a workflow: the row is stored and the waits that declare KEY are evaluated in the
same transaction. Says what it stored (or, with --json, prints the signal row). A replayed idempotency key with the same payload prints the
original row; with a different payload it is an error (exit 1), as is a signal for an earlier attempt, a
signal to a finished workflow, and one whose KEY no task of the workflow waits on (a typo, most likely).

Usage: ${usage}

  --payload JSON          the payload (inline JSON or @file; default null)
  --idempotency-key K     one row per workflow, key and K, however often it is sent
  --source JSON           who or what sent it (inline JSON or @file)
  --attempt N             refuse the signal unless the workflow is on attempt N
  --any-key               store it even when no task of the workflow waits on KEY
  --traceparent TP        the sender's W3C trace (00-<trace id>-<span id>-<flags>): the signal's span
                          continues it, and the wait it resolves links to it (OpenTelemetry)
  --json                  print the signal row as JSON
  --actor NAME            who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT           why, kept with the audit line
  --database URL          Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME           the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['payload', 'idempotency-key', 'source', 'attempt', 'database', 'schema', 'traceparent', 'actor', 'reason'], usage, ['json', 'any-key']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 2) throw new UsageError(`signal takes a workflow ID and a signal KEY (usage: ${usage})`);
  const [id, key] = positionals;
  const payload = values.payload === undefined ? null : readJson(io, values.payload, '--payload');
  const source = values.source === undefined ? undefined : readJson(io, values.source, '--source');
  let attempt: number | undefined;
  if (values.attempt !== undefined) {
    if (!/^[1-9][0-9]{0,8}$/.test(values.attempt)) throw new UsageError('--attempt must be a whole number from 1');
    attempt = Number(values.attempt);
  }
  if (values.traceparent !== undefined && !parseTraceParent(values.traceparent))
    throw new UsageError(`--traceparent must be a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>), not "${values.traceparent}"`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    const result = await backend.signal(id, key, payload, {
      idempotencyKey: values['idempotency-key'],
      source,
      attempt,
      anyKey: flags.has('any-key'),
      traceparent: values.traceparent,
    });
    if (flags.has('json')) io.stdout(`${JSON.stringify(result.signal)}\n`);
    else
      io.stdout(
        `${result.replayed ? 'already stored as' : 'stored'} signal ${result.signal.id} "${result.signal.key}" ` +
          `(attempt ${result.signal.attempt}) for workflow ${id}\n`,
      );
    if (result.replayed) io.stderr('braid: replayed: this idempotency key was already used with the same payload; nothing new was stored\n');
    if (result.resolved.length > 0) io.stderr(`braid: resolved the wait of ${result.resolved.join(', ')}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}
