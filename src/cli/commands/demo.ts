import { existsSync, readFileSync } from 'node:fs';
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

export const usage = 'braid demo [--definitions DIR] [--handlers MODULE] [--signals FILE] [--database URL]';

export const help = `Braid's main job on the example definitions: migrate the database (the embedded one in .braid/
unless DATABASE_URL is set), register the definitions, start each example workflow with the first example
of its inputs schema, emit the signals its waits need (from the signals file) when they start waiting, run
them to the end on the example handlers, and print their outputs.

Usage: ${usage}

  --definitions DIR   the definitions folder (default: ./definitions when it exists, else braid's examples)
  --handlers MODULE   the handlers module (default: braid's example handlers)
  --signals FILE      signals to emit, by workflow: { "NAME": [{ "when_waiting": TASK, "key": K, "payload": {...} }] }
                      (default: braid's examples/signals.json with braid's example definitions)
  --database URL      Postgres instead of the embedded database
  --timeout SECS      how long to wait for the workflows (default: 120)
`;

interface ScriptedSignal {
  when_waiting: string;
  key: string;
  payload?: unknown;
  source?: unknown;
}

/** Why the demo cannot drive a definition to its end, if it cannot: child workflows and cross-workflow waits come later; signals need a script. */
function unrunnable(def: NormalizedDefinition, script: readonly ScriptedSignal[]): string | undefined {
  if (def.tasks.some((t) => t.start !== undefined || t.wait?.terms.some((term) => term.kind === 'workflows'))) {
    return 'it starts or waits on other workflows, which this release does not run yet';
  }
  for (const t of def.tasks) {
    for (const term of t.wait?.terms ?? []) {
      if (term.kind === 'signal' && !script.some((s) => s.when_waiting === t.name && s.key === term.signal)) {
        return `task ${t.name} waits on signal "${term.signal}", which the signals file does not emit`;
      }
    }
  }
  return undefined;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['definitions', 'handlers', 'signals', 'database', 'timeout'], usage);
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
  const signalsPath = values.signals !== undefined ? resolve(io.cwd, values.signals) : dir === join(packageRoot, 'definitions') ? join(packageRoot, 'examples', 'signals.json') : undefined;
  const scripts = signalsPath === undefined ? {} : readScript(signalsPath);

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
    const pending: { id: string; signal: ScriptedSignal; n: number }[] = [];
    for (const def of validation.definitions) {
      const script = scripts[def.name] ?? [];
      const why = unrunnable(def.normalized, script);
      if (why) {
        io.stdout(`skip  ${def.name}: ${why}\n`);
        continue;
      }
      const examples = (def.normalized.inputs as { examples?: unknown[] } | undefined)?.examples;
      const id = await rt.start(def.name, examples?.[0] ?? {});
      started.push({ name: def.name, id });
      script.forEach((signal, n) => pending.push({ id, signal, n }));
      io.stdout(`start ${def.name} ${id}\n`);
    }
    let failed = 0;
    const deadline = Date.now() + timeoutMs;
    // emit each scripted signal once its task is waiting, as a person or a webhook would
    while (pending.length > 0 && Date.now() < deadline) {
      for (const p of [...pending]) {
        const task = await rt.workflow(p.id).task(p.signal.when_waiting);
        if (task.wait?.phase !== 'waiting' && task.state === 'pending') continue;
        pending.splice(pending.indexOf(p), 1);
        if (task.state !== 'pending') continue;
        const r = await rt.workflow(p.id).signals.emit(p.signal.key, p.signal.payload ?? null, { source: p.signal.source, idempotencyKey: `braid-demo-${p.n}` });
        io.stdout(`  signal ${p.signal.key} ${JSON.stringify(p.signal.payload ?? null)} -> ${p.id.slice(-8)}${r.resolved.length ? ` (resolves ${r.resolved.join(', ')})` : ''}\n`);
      }
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 50));
    }
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

function readScript(path: string): Record<string, ScriptedSignal[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`cannot read the signals file ${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const ok =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every(
      (list) => Array.isArray(list) && list.every((s) => typeof s === 'object' && s !== null && typeof (s as ScriptedSignal).when_waiting === 'string' && typeof (s as ScriptedSignal).key === 'string'),
    );
  if (!ok) throw new UsageError(`the signals file ${path} must map workflow names to lists of { "when_waiting": TASK, "key": KEY, "payload": ... }`);
  return parsed as Record<string, ScriptedSignal[]>;
}

function defaultFolder(io: Io): string {
  const local = resolve(io.cwd, 'definitions');
  return existsSync(local) ? local : join(packageRoot, 'definitions');
}
