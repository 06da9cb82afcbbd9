import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadHandlers } from '../../runtime/load-handlers.js';
import type { Logger } from '../../runtime/log.js';
import { createRuntime } from '../../runtime/runtime.js';
import { formatText } from '../../compiler/format/text.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { packageRoot } from '../../paths.js';
import { parse } from '../args.js';
import { openDatabase } from '../backend.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { EXIT, UsageError, type Io } from '../io.js';

export const usage = 'braid demo [--definitions DIR] [--handlers MODULE] [--database URL]';

export const help = `Braid's main job on the example definitions: migrate the database (the embedded one in .braid/
unless DATABASE_URL is set), register the definitions, start each example workflow with the first example
of its inputs schema, run them to the end on the example handlers, and print their outputs.

Usage: ${usage}

  --definitions DIR   the definitions folder (default: ./definitions when it exists, else braid's examples)
  --handlers MODULE   the handlers module (default: braid's example handlers)
  --database URL      Postgres instead of the embedded database
  --timeout SECS      how long to wait for the workflows (default: 120)
`;

/** What the runtime can run to the end today: waits and child workflows arrive with later releases. */
function runnable(def: NormalizedDefinition): boolean {
  return def.tasks.every((t) => t.wait === undefined && t.start === undefined);
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['definitions', 'handlers', 'database', 'timeout'], usage);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  if (positionals.length > 0) throw new UsageError(`demo takes no arguments (usage: ${usage})`);
  const dir = values.definitions !== undefined ? resolve(io.cwd, values.definitions) : defaultFolder(io);
  if (!existsSync(dir)) throw new UsageError(`no such folder: ${values.definitions}`);
  const timeoutMs = (values.timeout === undefined ? 120 : Number(values.timeout)) * 1000;
  if (!(timeoutMs > 0)) throw new UsageError('--timeout must be a positive number of seconds');
  const handlersPath = values.handlers !== undefined ? resolve(io.cwd, values.handlers) : join(packageRoot, 'examples', 'handlers.ts');
  const handlers = await loadHandlers(handlersPath).catch((error: Error) => {
    throw new UsageError(`cannot load handlers: ${error.message.split('\n')[0]}`);
  });

  const db = await openDatabase(io, { url: values.database });
  const quietLog: Logger = {
    info: () => undefined,
    warn: (m) => io.stderr(`warning: ${m}\n`),
    taskDone: (t, outcome) => io.stdout(`  ${outcome === 'completed' ? 'done' : outcome.padEnd(4)}  ${t.workflow_id.slice(-8)} ${t.name} (${t.kind})\n`),
  };
  const rt = createRuntime({ database: db, handlers, queues: { default: 10, billing: 10, email: 4 }, logger: quietLog, pollIntervalMs: 200 });
  try {
    const applied = await rt.migrate();
    io.stdout(`braid demo: ${values.database || process.env.DATABASE_URL ? 'Postgres' : `embedded database in ${displayPath(io, join(io.cwd, '.braid'))}`}${applied.length ? ` (migrated: ${applied.join(', ')})` : ''}\n`);
    const { validation, registered } = await rt.registerDefinitions(dir);
    io.stdout(`definitions: ${displayPath(io, dir)}: ${validation.definitions.length} valid, ${validation.errors} error(s); ${registered.length} new version(s) registered\n`);
    if (validation.diagnostics.length > 0) io.stdout(formatText(validation.diagnostics, { sources: readSourceTexts(validation, io) }));
    await rt.startWorker();
    const started: { name: string; id: string }[] = [];
    for (const def of validation.definitions) {
      if (!runnable(def.normalized)) {
        io.stdout(`skip  ${def.name}: it waits on signals, timers or other workflows, which this release does not run yet\n`);
        continue;
      }
      const examples = (def.normalized.inputs as { examples?: unknown[] } | undefined)?.examples;
      const id = await rt.start(def.name, examples?.[0] ?? {});
      started.push({ name: def.name, id });
      io.stdout(`start ${def.name} ${id}\n`);
    }
    let failed = 0;
    const deadline = Date.now() + timeoutMs;
    for (const { name, id } of started) {
      const w = await rt.workflow(id).waitUntilFinal({ timeoutMs: Math.max(1, deadline - Date.now()), pollMs: 200 });
      if (w.state !== 'completed') failed++;
      io.stdout(`\n${name} ${id}: ${w.state}\n  output: ${JSON.stringify(w.output)}\n${w.output_error ? `  output error: ${w.output_error}\n` : ''}`);
    }
    io.stdout(`\n${started.length - failed} of ${started.length} workflow(s) completed.\n`);
    return failed > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await rt.stop(2000);
    await db.close();
  }
}

function defaultFolder(io: Io): string {
  const local = resolve(io.cwd, 'definitions');
  return existsSync(local) ? local : join(packageRoot, 'definitions');
}
