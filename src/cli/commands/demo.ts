import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { formatText } from '../../compiler/format/text.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import type { ValidationResult } from '../../compiler/validate.js';
import { packageRoot } from '../../paths.js';
import { createRuntime } from '../../runtime/index.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Logger } from '../../runtime/telemetry/log.js';
import { parse } from '../args.js';
import { braidDir, databaseUrl, openDatabase } from '../backend.js';
import { displayPath, readSourceTexts } from '../definitions.js';
import { EXIT, type Io, UsageError } from '../io.js';
import { USAGE } from '../usage.js';
import { loadHandlersArg } from './serve.js';

export const usage = USAGE.demo;

export const help = `Braid's main job on the example definitions: migrate the database (the embedded one in .braid/
unless DATABASE_URL is set), register the definitions, start each example workflow with the first example
of its inputs schema, emit the signals its waits need when they start waiting, run them to the end on the
example handlers, and print their outputs.

Usage: ${usage}

  --definitions DIR   the definitions folder (default: ./definitions when it exists, else braid's examples)
  --handlers MODULE   the handlers module (default: braid's example handlers)
  --script FILE       per workflow: signals to emit and inputs to use (default: braid's examples/demo.json
                      with braid's example definitions):
                      { "NAME": { "signals": [{ "when_waiting": TASK, "key": K, "payload": {...} }],
                                  "inputs": { "field": { "$started": "OTHER" } } } }
                      where { "$started": "OTHER" } stands for the ids of the OTHER workflows the demo started
  --database URL      Postgres instead of the embedded database
  --timeout SECS      how long to wait for the workflows (default: 120)
`;

interface ScriptedSignal {
  when_waiting: string;
  key: string;
  payload?: unknown;
  source?: unknown;
}

interface Script {
  signals?: ScriptedSignal[];
  inputs?: Record<string, unknown>;
}

/** Why the demo cannot drive a definition to its end, if it cannot: a signal no script emits. */
function unrunnable(def: NormalizedDefinition, script: Script): string | undefined {
  for (const t of def.tasks) {
    for (const term of t.wait?.terms ?? []) {
      if (term.kind === 'signal' && !(script.signals ?? []).some((s) => s.when_waiting === t.name && s.key === term.signal)) {
        return `task ${t.name} waits on signal "${term.signal}", which the demo script does not emit`;
      }
    }
  }
  return undefined;
}

/** The workflows a script's inputs name with { "$started": NAME }: they start first. */
function startedNames(script: Script): string[] {
  return Object.values(script.inputs ?? {}).flatMap((v) => (isStarted(v) ? [v.$started] : []));
}

function isStarted(v: unknown): v is { $started: string } {
  return typeof v === 'object' && v !== null && typeof (v as { $started?: unknown }).$started === 'string';
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['definitions', 'handlers', 'script', 'database', 'timeout'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`demo takes no arguments (usage: ${usage})`);
  const dir = values.definitions !== undefined ? resolve(io.cwd, values.definitions) : defaultFolder(io);
  if (!existsSync(dir)) throw new UsageError(`no such folder: ${values.definitions}`);
  const timeoutMs = (values.timeout === undefined ? 120 : Number(values.timeout)) * 1000;
  if (!(timeoutMs > 0)) throw new UsageError('--timeout must be a positive number of seconds');
  const handlersPath = values.handlers !== undefined ? resolve(io.cwd, values.handlers) : join(packageRoot, 'examples', 'handlers.ts');
  const handlers = await loadHandlersArg(handlersPath);
  const scriptPath =
    values.script !== undefined
      ? resolve(io.cwd, values.script)
      : dir === join(packageRoot, 'definitions')
        ? join(packageRoot, 'examples', 'demo.json')
        : undefined;
  const scripts = scriptPath === undefined ? {} : readScript(scriptPath);

  const db = await openDatabase(io, { url: values.database });
  const quietLog: Logger = {
    info: () => undefined,
    warn: (m) => io.stderr(`warning: ${m}\n`),
    taskDone: (t, outcome) => io.stdout(`  ${outcome === 'completed' ? 'done' : outcome.padEnd(4)}  ${t.workflow_id.slice(-8)} ${t.name} (${t.kind})\n`),
  };
  const rt = createRuntime({ database: db, handlers, queues: { default: 10, billing: 10, email: 4 }, logger: quietLog, pollIntervalMs: 200 });
  try {
    const applied = await rt.migrate();
    io.stdout(
      `braid demo: ${databaseUrl(io, values.database) ? 'Postgres' : `embedded database in ${displayPath(io, braidDir(io))}`}` +
        `${applied.length ? ` (migrated: ${applied.join(', ')})` : ''}\n`,
    );
    const { validation, registered } = await rt.registerDefinitions(dir);
    io.stdout(
      `definitions: ${displayPath(io, dir)}: ${validation.definitions.length} valid, ` +
        `${validation.errors} error(s); ${registered.length} new version(s) registered\n`,
    );
    if (validation.diagnostics.length > 0) io.stdout(formatText(validation.diagnostics, { sources: readSourceTexts(validation, io) }));
    await rt.startWorker();
    const { started, pending } = await startEach(rt, validation.definitions, scripts, io);
    const deadline = Date.now() + timeoutMs;
    await emitScripted(rt, pending, deadline, io);
    const failed = await reportEach(rt, started, deadline, io);
    io.stdout(`\n${started.length - failed} of ${started.length} workflow(s) completed.\n`);
    return failed > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await rt.stop(2000);
    await db.close();
  }
}

type Started = { name: string; id: string };
type Pending = { id: string; signal: ScriptedSignal; n: number };

/** Starts each runnable definition once, with its first example's inputs and its script's; says what it skips. */
async function startEach(rt: Runtime, definitions: ValidationResult['definitions'], scripts: Record<string, Script>, io: Io) {
  const started: Started[] = [];
  const pending: Pending[] = [];
  // workflows whose inputs name others start after those
  const defs = [...definitions].sort((a, b) => Number(startedNames(scripts[a.name] ?? {}).length > 0) - Number(startedNames(scripts[b.name] ?? {}).length > 0));
  for (const def of defs) {
    const script = scripts[def.name] ?? {};
    const why = unrunnable(def.normalized, script);
    if (why) {
      io.stdout(`skip  ${def.name}: ${why}\n`);
      continue;
    }
    const examples = (def.normalized.inputs as { examples?: unknown[] } | undefined)?.examples;
    const scripted = Object.fromEntries(
      Object.entries(script.inputs ?? {}).map(([k, v]) => [k, isStarted(v) ? started.filter((s) => s.name === v.$started).map((s) => s.id) : v]),
    );
    const base = examples?.[0];
    const inputs =
      typeof base === 'object' && base !== null && !Array.isArray(base) ? { ...base, ...scripted } : Object.keys(scripted).length > 0 ? scripted : (base ?? {});
    const id = await rt.start(def.name, inputs);
    started.push({ name: def.name, id });
    for (const [n, signal] of (script.signals ?? []).entries()) pending.push({ id, signal, n });
    io.stdout(`start ${def.name} ${id}\n`);
  }
  return { started, pending };
}

/** Emits each scripted signal once its task is waiting, as a person or a webhook would. */
async function emitScripted(rt: Runtime, pending: Pending[], deadline: number, io: Io): Promise<void> {
  while (pending.length > 0 && Date.now() < deadline) {
    for (const p of [...pending]) {
      const task = await rt.workflow(p.id).task(p.signal.when_waiting);
      if (task.wait?.phase !== 'waiting' && task.state === 'pending') continue;
      pending.splice(pending.indexOf(p), 1);
      if (task.state !== 'pending') continue;
      const r = await rt.workflow(p.id).signals.emit(p.signal.key, p.signal.payload ?? null, { source: p.signal.source, idempotencyKey: `braid-demo-${p.n}` });
      io.stdout(
        `  signal ${p.signal.key} ${JSON.stringify(p.signal.payload ?? null)} -> ` +
          `${p.id.slice(-8)}${r.resolved.length ? ` (resolves ${r.resolved.join(', ')})` : ''}\n`,
      );
    }
    if (pending.length > 0) await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits for each started workflow and prints how it ended; returns how many did not complete. */
async function reportEach(rt: Runtime, started: readonly Started[], deadline: number, io: Io): Promise<number> {
  let failed = 0;
  for (const { name, id } of started) {
    const w = await rt.workflow(id).waitUntilFinal({ timeoutMs: Math.max(1, deadline - Date.now()), pollMs: 200 });
    if (w.state !== 'completed') failed++;
    // the branches not taken: a skipped task never reaches a worker, so no line above names it
    const skipped = (await rt.workflow(id).tasks()).filter((t) => t.state === 'skipped').map((t) => t.name);
    io.stdout(
      `\n${name} ${id}: ${w.state}${skipped.length > 0 ? ` (skipped: ${skipped.join(', ')})` : ''}\n  output: ` +
        `${JSON.stringify(w.output)}\n${w.output_error ? `  output error: ${w.output_error}\n` : ''}`,
    );
  }
  return failed;
}

function readScript(path: string): Record<string, Script> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`cannot read the demo script ${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const isSignal = (s: unknown) =>
    typeof s === 'object' && s !== null && typeof (s as ScriptedSignal).when_waiting === 'string' && typeof (s as ScriptedSignal).key === 'string';
  const ok =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every(
      (entry: unknown) =>
        typeof entry === 'object' &&
        entry !== null &&
        ((entry as Script).signals === undefined || (Array.isArray((entry as Script).signals) && (entry as Script).signals!.every(isSignal))) &&
        ((entry as Script).inputs === undefined || (typeof (entry as Script).inputs === 'object' && !Array.isArray((entry as Script).inputs))),
    );
  if (!ok)
    throw new UsageError(
      `the demo script ${path} must map workflow names to { "signals": [{ "when_waiting": TASK, "key": KEY, "payload": ... }], "inputs": {...} }`,
    );
  return parsed as Record<string, Script>;
}

function defaultFolder(io: Io): string {
  const local = resolve(io.cwd, 'definitions');
  return existsSync(local) ? local : join(packageRoot, 'definitions');
}
