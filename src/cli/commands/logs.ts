import { printable } from '../../compiler/diagnostics.js';
import type { LogLine } from '../../runtime/wire/index.js';
import { parse } from '../args.js';
import { type Backend, openBackend } from '../backend.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';

export const usage = USAGE.logs;

export const help = `Show a workflow's task logs: what its handlers wrote with ctx.log, and braid's own lines about
their attempts (marked [braid]), in the order they were stored.

Usage: ${usage}

  TASK              only this task's lines
  --attempt N       only this attempt's lines (with TASK)
  --follow          keep printing new lines until the workflow ends (or Ctrl-C)
  --json            one JSON object per line
  --database URL    Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME     the schema of braid's tables (default: braid)
`;

/** How often --follow looks for new lines, and how often it asks whether the workflow ended. */
const FOLLOW_MS = 500;
const STATE_EVERY = 4;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, flags, help: wantsHelp, positionals } = parse(argv, ['attempt', 'database', 'schema'], usage, ['follow', 'json']);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length < 1 || positionals.length > 2) throw new UsageError(`logs takes a workflow ID and optionally a TASK (usage: ${usage})`);
  const [id, task] = positionals;
  let attempt: number | undefined;
  if (values.attempt !== undefined) {
    if (!/^[1-9][0-9]{0,8}$/.test(values.attempt)) throw new UsageError(`--attempt must be a whole number from 1, not "${values.attempt}"`);
    if (task === undefined) throw new UsageError('--attempt needs a TASK');
    attempt = Number(values.attempt);
  }
  const print = (line: LogLine) => io.stdout(flags.has('json') ? `${JSON.stringify(line)}\n` : `${renderLine(line)}\n`);
  const backend = await openBackend(io, { url: values.database, schema: values.schema });
  try {
    let after = await printAll(backend, id, { task, attempt }, print);
    if (!flags.has('follow')) return EXIT.ok;
    let stop = false;
    const onSignal = () => (stop = true);
    process.once('SIGINT', onSignal);
    try {
      for (let round = 0; !stop; round++) {
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
        const ended = round % STATE_EVERY === 0 && (await backend.status(id)).workflow.state !== 'running';
        after = await printAll(backend, id, { task, attempt, after }, print);
        if (ended) break;
      }
    } finally {
      process.removeListener('SIGINT', onSignal);
    }
    return EXIT.ok;
  } finally {
    await backend.close();
  }
}

/** Prints every line after `after`, page by page; returns the cursor to go on from. */
async function printAll(
  backend: Backend,
  id: string,
  options: { task?: string; attempt?: number; after?: string },
  print: (line: LogLine) => void,
): Promise<string | undefined> {
  let after = options.after;
  for (;;) {
    const page = await backend.logs(id, { ...options, after, limit: 1000 });
    for (const line of page.lines) print(line);
    after = page.next_after ?? after;
    if (!page.has_more) return after;
  }
}

/** `2026-01-01T00:00:00.000Z  charge#2  warn   [braid] message  {"fields":...}`, safe for a terminal. */
export function renderLine(line: LogLine): string {
  const at = new Date(line.at).toISOString();
  const fields = line.fields && Object.keys(line.fields).length > 0 ? `  ${JSON.stringify(line.fields)}` : '';
  return printable(`${at}  ${line.task}#${line.attempt}  ${line.level.padEnd(5)}  ${line.source === 'braid' ? '[braid] ' : ''}${line.message}${fields}`);
}
