import { resolve } from 'node:path';
import { type ApiServer, type ApiServerOptions, startApiServer } from '../../api/server.js';
import { DefinitionsWatcher } from '../../dev/definitions-watcher.js';
import { HandlersWatcher } from '../../dev/handlers-watcher.js';
import { consoleLogger, createRuntime, DEFAULT_CONCURRENCY } from '../../runtime/index.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Logger } from '../../runtime/telemetry/log.js';
import type { Handlers } from '../../runtime/worker/handlers.js';
import { parse } from '../args.js';
import { openDatabase, projectToken, publishApi } from '../backend.js';
import { displayPath } from '../definitions.js';
import { httpKinds, withHttpKinds } from '../http-kinds.js';
import { commandFailure, EXIT, type Io, UsageError } from '../io.js';
import { braidDir, definitionSet, eventSignatures, handlersModule as handlersModuleOf, linkOptions, project, projectChecks, schemaName } from '../project.js';
import { USAGE } from '../usage.js';
import {
  listenOn,
  loadHandlersArg,
  parsePort,
  queuesOption,
  RECOVERY_OPTIONS,
  recoveryHelp,
  recoveryOptions,
  shutdownMs,
  surviveUnhandledRejections,
  waitForStopSignal,
} from './serve.js';
import { warnMissingKinds } from './worker.js';

export const usage = USAGE.dev;

export const help = `One process for development: migrates, registers the definitions, runs a worker, serves the API
and the web UI, and watches the definitions folder and the handlers module. A saved definition is
validated with its folder and registered as a new version (running workflows keep theirs); a broken
save keeps the last good version and says so here and in the UI. A changed handlers module is loaded
for tasks that start afterwards. Embedded database by default; DATABASE_URL or --database for Postgres.

Usage: ${usage}

  --definitions DIR         the definitions folder (default: the config's definitions, else definitions/)
  --handlers MODULE         a .js, .mjs or .ts module whose default export maps kinds to handlers
                            (default: the config's handlers)
  --port N                  the UI and API port (default: 4780; 0 picks a free one)
  --host ADDR               the address to listen on (default: 127.0.0.1)
  --queues NAME=N,...       queues and their concurrency (default: the config's queues, else every queue the
                            definitions use, 10 each)
  --database URL            Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME             the schema of braid's tables (default: braid)
  --shutdown-timeout SECS   how long running handlers get to finish at shutdown (default: 10)
${recoveryHelp}

The UI asks once for the token in .braid/token (or open it as /#token=TOKEN).
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    help: wantsHelp,
    positionals,
  } = parse(argv, ['definitions', 'handlers', 'port', 'host', 'queues', 'database', 'schema', 'shutdown-timeout', ...RECOVERY_OPTIONS], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`dev takes no arguments (usage: ${usage})`);
  const { dir, globs, port, fixedQueues, stopMs, recovery, handlersModule } = devOptions(io, values);
  const http = httpKinds(io);
  const handlers: Handlers = withHttpKinds(handlersModule ? await loadHandlersArg(handlersModule) : {}, http);
  const db = await openDatabase(io, { url: values.database, schema: values.schema });
  const schema = schemaName(io, values.schema);
  const log = consoleLogger((line) => io.stdout(`${line}\n`));
  const undoSurvive = surviveUnhandledRejections(log);
  const print = (text: string) => text && io.stdout(text);
  let rt: Runtime | undefined;
  let api: ApiServer | undefined;
  let definitions: DefinitionsWatcher | undefined;
  let handlersWatcher: HandlersWatcher | undefined;
  let unpublish: () => void = () => undefined;
  try {
    const worker = project(io).config?.worker;
    rt = createRuntime({
      database: db,
      schema,
      handlers,
      queues: fixedQueues ?? { default: DEFAULT_CONCURRENCY },
      logger: log,
      taskLog: { maxLines: worker?.logLines, maxBytes: worker?.logBytes },
      ...recovery,
      ...linkOptions(io, values.database, true),
    });
    await rt.migrate();
    const runtime = rt;
    definitions = watchDefinitions(io, runtime, { dir, globs, fixedQueues, print, log, onReload: () => api?.devChanged() });
    const first = await definitions.start();
    if (!fixedQueues) await runtime.addQueues(queuesAt(first.queues));
    warnMissingKinds(log, await runtime.deployBaseline(), handlers);
    await runtime.startWorker();
    const watcher = definitions;
    if (handlersModule) {
      handlersWatcher = new HandlersWatcher(runtime, handlersModule, Object.keys(handlers).sort(), { print, http, onReload: () => api?.devChanged() });
      await handlersWatcher.start();
    }
    api = await serveDev(io, runtime, { port, host: values.host, definitionsDir: dir, log, dev: () => devState(watcher, handlersWatcher) });
    unpublish = publishApi(io, api);
    // listening before saying it runs: a SIGTERM sent on reading these lines finds the graceful stop in place
    const stopSignal = waitForStopSignal();
    log.info(`braid dev: UI and API at ${api.url}/ (token in ${displayPath(io, resolve(braidDir(io), 'token'))})`);
    log.info(
      `watching ${displayPath(io, dir)}${handlersModule ? ` and ${displayPath(io, handlersModule)}` : ''}; ` +
        `worker ${runtime.id} running ${Object.keys(handlers).length} kind(s)`,
    );
    const signal = await stopSignal;
    log.info(`${signal}: stopping (running handlers get ${stopMs / 1000} s)`);
    await handlersWatcher?.stop();
    await definitions.stop();
    await runtime.stop(stopMs);
    log.info('stopped');
    return EXIT.ok;
  } catch (error) {
    throw commandFailure(error);
  } finally {
    await handlersWatcher?.stop().catch(() => undefined);
    await definitions?.stop().catch(() => undefined);
    await api?.close();
    unpublish();
    await rt?.stop(0).catch(() => undefined);
    await db.close();
    undoSurvive();
  }
}

/** The options given, checked before anything starts. */
function devOptions(io: Io, values: Record<string, string | undefined>) {
  const set = definitionSet(io, values.definitions);
  const { config } = project(io);
  // a config's globs are worked out again on every reload, watching the project's folder; else the one folder
  const globs = values.definitions === undefined && config?.definitions !== undefined && set.folder === undefined;
  const dir = globs ? config!.root : set.folder;
  if (dir === undefined) throw new UsageError(`no definitions folder at ${set.label} (create it, or pass --definitions DIR)`);
  const port = parsePort(values.port, 4780);
  const fixedQueues = queuesOption(io, values.queues);
  const stopMs = shutdownMs(io, values['shutdown-timeout']);
  const recovery = recoveryOptions(io, values);
  const handlersModule = handlersModuleOf(io, values.handlers);
  return { dir, globs, port, fixedQueues, stopMs, recovery, handlersModule };
}

/** What the UI shows of the watchers: the last reload of each. */
function devState(definitions: DefinitionsWatcher, handlers: HandlersWatcher | undefined) {
  return { definitions: definitions.state ?? null, handlers: handlers?.state ?? null };
}

/**
 * The definitions watcher: a config's globs are worked out again on every reload, watching the project's folder;
 * a definition may name a new queue, which the worker then serves (unless the queues were given).
 */
/** The dev process's UI and API: the project's token, and the webhooks its config signs. */
function serveDev(io: Io, runtime: Runtime, o: Pick<ApiServerOptions, 'port' | 'host' | 'definitionsDir' | 'log' | 'dev'>): Promise<ApiServer> {
  return listenOn(o.port ?? 0, () =>
    startApiServer(runtime, { ...o, token: projectToken(io), eventSignatures: eventSignatures(io), projectChecks: projectChecks(io) }),
  );
}

function watchDefinitions(
  io: Io,
  runtime: Runtime,
  o: { dir: string; globs: boolean; fixedQueues: Record<string, number> | undefined; print: (text: string) => void; log: Logger; onReload: () => void },
): DefinitionsWatcher {
  return new DefinitionsWatcher(runtime, o.dir, {
    files: o.globs ? () => definitionSet(io, undefined).files : undefined,
    ...projectChecks(io),
    print: o.print,
    display: (file) => displayPath(io, file),
    onReload: (state) => {
      o.onReload();
      if (!o.fixedQueues) void runtime.addQueues(queuesAt(state.queues)).catch((e: Error) => o.log.warn(`adding queues: ${e.message}`));
    },
  });
}

/** Queues a definition uses, at the default concurrency. */
function queuesAt(names: readonly string[]): Record<string, number> {
  return Object.fromEntries(names.map((q) => [q, DEFAULT_CONCURRENCY]));
}
