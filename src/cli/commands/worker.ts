import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { startApiServer } from '../../api/server.js';
import type { ValidationResult } from '../../compiler/validate.js';
import { formatText } from '../../compiler/format/text.js';
import { consoleLogger } from '../../runtime/log.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { parse } from '../args.js';
import { databaseUrl, openDatabase, projectToken, publishApi } from '../backend.js';
import { readSourceTexts } from '../definitions.js';
import { commandFailure, EXIT, UsageError, type Io } from '../io.js';
import { loadHandlersArg, recoveryHelp, recoveryOptions, RECOVERY_OPTIONS, surviveUnhandledRejections, waitForStopSignal } from './serve.js';

export const usage = 'braid worker --handlers MODULE [--queues NAME=N,...] [--prefetch N] [--definitions DIR] [--database URL]';

export const help = `Run handlers until SIGINT or SIGTERM (then stop gracefully). Registers the definitions folder
first. With the embedded database, this process holds it and serves the project's other commands.

Usage: ${usage}

  --handlers MODULE         a .js, .mjs or .ts module whose default export maps kinds to handlers
  --queues NAME=N,...       queues and their concurrency (default: every queue the definitions use, 10 each)
  --prefetch N              tasks per queue claimed ahead of free slots (default 0); raises throughput for
                            short handlers, but a prefetched task waits for this process
  --definitions DIR         the definitions folder (default: definitions)
  --database URL            Postgres (default: DATABASE_URL; else the embedded database in .braid/)
  --schema NAME             the schema of braid's tables (default: braid)
  --shutdown-timeout SECS   how long running handlers get to finish at shutdown (default: 10)
${recoveryHelp}
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['handlers', 'queues', 'prefetch', 'definitions', 'database', 'schema', 'shutdown-timeout', ...RECOVERY_OPTIONS], usage);
  if (wantsHelp) return io.stdout(help), EXIT.ok;
  if (positionals.length > 0) throw new UsageError(`worker takes no arguments (usage: ${usage})`);
  if (!values.handlers) throw new UsageError(`--handlers MODULE is required (usage: ${usage})`);
  const queues = values.queues === undefined ? undefined : parseQueues(values.queues);
  const prefetch = values.prefetch === undefined ? 0 : Number(values.prefetch);
  if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > 10_000) throw new UsageError('--prefetch must be a whole number from 0 to 10000');
  const shutdownSecs = values['shutdown-timeout'] === undefined ? 10 : Number(values['shutdown-timeout']);
  if (!(shutdownSecs >= 0)) throw new UsageError('--shutdown-timeout must be a number of seconds');
  const recovery = recoveryOptions(values);
  const handlers = await loadHandlersArg(resolve(io.cwd, values.handlers));
  const db = await openDatabase(io, { url: values.database });
  const log = consoleLogger((line) => io.stdout(line + '\n'));
  const undoSurvive = surviveUnhandledRejections(log);
  let rt: Runtime | undefined;
  let unpublish = () => undefined as void;
  let api: { close(): Promise<void> } | undefined;
  try {
    const dir = resolve(io.cwd, values.definitions ?? 'definitions');
    const registrar = createRuntime({ database: db, schema: values.schema });
    await registrar.migrate();
    const registered = existsSync(dir) ? await registrar.registerDefinitions(dir) : undefined;
    if (registered) reportRegistration(io, registered.validation, registered.registered);
    rt = createRuntime({
      database: db,
      schema: values.schema,
      handlers,
      queues: queues ?? defaultQueues(registered?.validation),
      prefetch,
      logger: log,
      ...recovery,
    });
    await rt.startWorker();
    if (!databaseUrl({ url: values.database })) {
      const server = await startApiServer(rt, { token: projectToken(io), definitionsDir: existsSync(dir) ? dir : undefined, log });
      api = server;
      unpublish = publishApi(io, server);
    }
    log.info(`worker ${rt.id} running ${Object.keys(handlers).length} kind(s): ${Object.keys(handlers).sort().join(', ')}`);
    const signal = await waitForStopSignal();
    log.info(`${signal}: stopping (running handlers get ${shutdownSecs} s)`);
    await rt.stop(shutdownSecs * 1000);
    log.info('stopped');
    return EXIT.ok;
  } catch (error) {
    throw commandFailure(error);
  } finally {
    await api?.close();
    unpublish();
    await db.close();
    undoSurvive();
  }
}

export function parseQueues(spec: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of spec.split(',').filter(Boolean)) {
    const m = /^([A-Za-z0-9_.-]{1,64})(?:=([1-9][0-9]{0,3}))?$/.exec(part.trim());
    if (!m) throw new UsageError(`--queues: "${part}" is not NAME or NAME=CONCURRENCY`);
    out[m[1]] = m[2] ? Number(m[2]) : 10;
  }
  return out;
}

export function defaultQueues(validation: ValidationResult | undefined): Record<string, number> {
  const names = new Set(['default']);
  for (const d of validation?.definitions ?? []) for (const t of d.normalized.tasks) names.add(t.queue);
  return Object.fromEntries([...names].sort().map((q) => [q, 10]));
}

export function reportRegistration(io: Io, validation: ValidationResult, registered: { name: string; hash: string }[]): void {
  if (validation.diagnostics.length > 0) io.stdout(formatText(validation.diagnostics, { sources: readSourceTexts(validation, io) }));
  for (const r of registered) io.stdout(`registered ${r.name} version ${r.hash.slice(0, 12)}\n`);
}
