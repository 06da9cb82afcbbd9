import { parseDuration } from '../../compiler/duration.js';
import { parseTraceParent, WORKFLOW_ID } from '../../runtime/index.js';
import { isFinal, type WorkflowStatus } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { type Backend, databaseUrl, openBackend } from '../backend.js';
import { readInputs } from '../inputs.js';
import { batchSize, startFromFile } from '../inputs-file.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.start;

export const help = `Start a workflow from the current registered version of NAME (register versions with
\`braid register\`; \`braid dev\` registers on every save). Prints the workflow id alone on one line; with
--wait, shows its progress on stderr, then prints its output as JSON.

Usage: ${usage}

  --id ID             the workflow's id, chosen by you (a business key: letters, digits, _ . : -, up to
                      128); starting again with the same id, NAME and inputs finds that workflow (said on
                      stderr, exit 0); another NAME or other inputs is a conflict (exit 1)
  --inputs JSON       start inputs as JSON, or @path to read them from a file (default: {})
  --inputs-file FILE  start one workflow per line of FILE (NDJSON: one JSON inputs value a line; - for
                      stdin), in batches, each all or nothing; prints each id in the file's order. A bad
                      line is named (FILE:LINE) and nothing of its batch starts
  --batch N           with --inputs-file, workflows a batch (default 500, at most 10000)
  --id-field FIELD    with --inputs-file, each line's business key is its inputs' FIELD
  --traceparent TP    continue this W3C trace (00-<trace id>-<span id>-<flags>): the workflow's spans
                      hang under that span (OpenTelemetry, in the process that starts it)
  --wait              wait until the workflow ends; exit 1 when it failed or was cancelled
  --timeout DURATION  with --wait, give up after this long (30s, 5m, 1h): exit 1, still running
  --actor NAME        who acts, for the audit trail (default: BRAID_ACTOR, else the OS user)
  --reason TEXT       why, kept with the audit line
  --database URL      Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME       the schema of braid's tables (default: braid)
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    flags,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['id', 'inputs', 'inputs-file', 'batch', 'id-field', 'database', 'schema', 'timeout', 'traceparent', 'actor', 'reason'], usage, ['wait']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length !== 1) throw new UsageError(`start takes one workflow NAME (usage: ${usage})`);
  const timeoutMs = values.timeout === undefined ? undefined : parseDuration(values.timeout);
  if (timeoutMs !== undefined && !(timeoutMs > 0)) throw new UsageError(`--timeout must be a duration such as 30s, 5m or 1h, not "${values.timeout}"`);
  if (values.timeout !== undefined && timeoutMs === undefined)
    throw new UsageError(`--timeout must be a duration such as 30s, 5m or 1h, not "${values.timeout}"`);
  if (values.id !== undefined && !WORKFLOW_ID.test(values.id))
    throw new UsageError(`--id is 1 to 128 letters, digits and _ . : - starting with a letter or digit, not "${values.id}"`);
  if (values.traceparent !== undefined && !parseTraceParent(values.traceparent))
    throw new UsageError(`--traceparent must be a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>), not "${values.traceparent}"`);
  if (values['inputs-file'] !== undefined) {
    if (flags.has('wait')) throw new UsageError('--inputs-file starts one workflow per line: it does not go with --wait');
    return startMany(io, positionals[0], values);
  }
  if (values.batch !== undefined || values['id-field'] !== undefined) throw new UsageError('--batch and --id-field go with --inputs-file');
  const inputs = readInputs(io, values.inputs);
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    if (flags.has('wait') && !backend.remote && !databaseUrl(io, values.database)) {
      throw new UsageError('--wait needs a running `braid worker` (or `braid dev`) for the embedded database: start one, then run this again');
    }
    const { id, existing } = await backend.start(positionals[0], inputs, { id: values.id, traceparent: values.traceparent });
    io.stdout(`${id}\n`);
    if (existing) io.stderr(`braid: ${await startedAs(backend, id)}\n`);
    if (!flags.has('wait')) return EXIT.ok;
    const w = await waitWithProgress(io, backend, id, timeoutMs ?? 365 * 24 * 3_600_000);
    if (w.state === 'running') {
      io.stderr(`braid: workflow ${id} is still running after ${values.timeout}\n`);
      return EXIT.failed;
    }
    if (w.state !== 'completed') {
      io.stderr(`braid: workflow ${id} ended ${w.state}${w.end_reason ? ` (${w.end_reason})` : ''}\n`);
      return EXIT.failed;
    }
    io.stdout(`${JSON.stringify(w.output)}\n`);
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** One workflow per line of --inputs-file, in batches. */
async function startMany(io: Io, name: string, values: Record<string, string | undefined>): Promise<number> {
  for (const flag of ['inputs', 'id', 'timeout', 'traceparent'] as const)
    if (values[flag] !== undefined) throw new UsageError(`--inputs-file starts one workflow per line: it does not go with --${flag}`);
  const batch = batchSize(values.batch);
  const backend = await openBackend(io, { url: values.database, schema: values.schema }, {}, { actor: values.actor, reason: values.reason });
  try {
    await startFromFile(io, backend, name, values['inputs-file']!, { batch, idField: values['id-field'] });
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/**
 * Waits for the workflow to end, reporting its progress on stderr: one line rewritten in place on a terminal,
 * a line per change otherwise. What waits, and on what, is said as soon as it is known (a task whose kind no
 * live worker handles included), so a wait is never silent.
 */
async function waitWithProgress(io: Io, backend: Backend, id: string, timeoutMs: number): Promise<WorkflowStatus['workflow']> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  const tty = io.isTTY;
  try {
    for (;;) {
      const status = await backend.status(id);
      const line = progressLine(status);
      if (line !== last) {
        io.stderr(tty ? `\r\x1b[K${line.slice(0, 200)}` : `${line}\n`);
        last = line;
      }
      if (status.workflow.state !== 'running' || Date.now() >= deadline) return status.workflow;
      // the long poll returns as soon as the workflow ends; otherwise progress is read again in a moment
      const w = await backend.waitFinal(id, Math.min(500, Math.max(0, deadline - Date.now())));
      if (w.state !== 'running') {
        const final = progressLine(await backend.status(id));
        if (final !== last) io.stderr(tty ? `\r\x1b[K${final.slice(0, 200)}` : `${final}\n`);
        return w;
      }
    }
  } finally {
    if (tty && last) io.stderr('\n');
  }
}

/** "2/5 tasks done; waiting: decide on approved || sla: approved 0/1 signal, ...". */
export function progressLine({ workflow, tasks }: WorkflowStatus): string {
  const done = tasks.filter((t) => isFinal(t.state)).length;
  const head = `${workflow.name} ${workflow.id}: ${done}/${tasks.length} tasks done`;
  if (workflow.state !== 'running') return `${head}; ${workflow.state}`;
  const running = tasks.filter((t) => t.state === 'running').map((t) => t.name);
  const waiting = tasks.filter((t) => t.pending_reason && !t.pending_reason.startsWith('waiting on deps') && t.pending_reason !== 'waiting for a free worker');
  const parts = [head];
  if (running.length > 0) parts.push(`running: ${running.slice(0, 5).join(', ')}${running.length > 5 ? ` and ${running.length - 5} more` : ''}`);
  for (const t of waiting.slice(0, 3)) parts.push(`${t.name} ${t.pending_reason}`);
  return parts.join('; ');
}

/** What a start that found its workflow there did: debounced into a waiting run (inputs replaced), or nothing. */
async function startedAs(backend: Backend, id: string): Promise<string> {
  const { workflow } = await backend.status(id);
  const until = workflow.debounce_until ? new Date(workflow.debounce_until) : undefined;
  if (workflow.state === 'running' && until && until.getTime() > Date.now() - 1000)
    return `debounced into ${id}: inputs replaced, runs at ${until.toISOString()}`;
  return `workflow ${id} already started`;
}
