import { type ApiServer, type ApiServerOptions, startApiServer } from '../../api/server.js';
import { type NormalizedDefinition, START_KIND } from '../../compiler/normalize.js';
import type { BaselineVersion } from '../../deploy/baseline.js';
import { within } from '../../pacing/within.js';
import { consoleLogger, createRuntime, DEFAULT_CONCURRENCY, loadMetrics } from '../../runtime/index.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Logger } from '../../runtime/telemetry/log.js';
import type { Metrics } from '../../runtime/telemetry/metrics.js';
import type { Handlers } from '../../runtime/worker/handlers.js';
import { parse } from '../args.js';
import { openDatabase, projectToken, publishApi } from '../backend.js';
import { httpKinds, withHttpKinds } from '../http-kinds.js';
import { commandFailure, EXIT, type Io, UsageError } from '../io.js';
import { databaseUrl, eventSignatures, handlersModule, linkOptions, project, projectChecks, schemaName } from '../project.js';
import { USAGE } from '../usage.js';
import {
  listenOn,
  loadHandlersArg,
  parsePort,
  queuesOption,
  RECOVERY_OPTIONS,
  recoveryHelp,
  recoveryOptions,
  requiredHandlers,
  shutdownMs,
  surviveUnhandledRejections,
  waitForStopSignal,
} from './serve.js';

export const usage = USAGE.worker;

export const help = `Run handlers until SIGINT or SIGTERM (then stop gracefully), for the registered definitions
(\`braid register\` deploys them; a worker registers nothing). With the embedded database, this process holds
it and serves the project's other commands. Flags override braid.config.yaml.

Usage: ${usage}

  --handlers MODULE         a .js, .mjs or .ts module whose default export maps kinds to handlers
                            (default: the config's handlers)
  --queues NAME=N,...       queues and their concurrency (default: the config's queues, else every queue
                            the registered definitions use, 10 each)
  --prefetch N              tasks per queue claimed ahead of free slots (default 0); raises throughput for
                            short handlers, but a prefetched task waits for this process
  --database URL            Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME             the schema of braid's tables (default: braid)
  --metrics-port N          serve GET /metrics (Prometheus text: what this worker ran, queue depth, workflows)
                            on this port (0 picks a free one)
  --metrics-host ADDR       where /metrics listens (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere): it
                            answers only to this machine's names in the Host header
  --metrics-token T         /metrics answers only with Authorization: Bearer T (default: BRAID_METRICS_TOKEN;
                            at least 16 characters)
  --port N                  the port of its API (callback links, events' webhooks, the UI's routes; the token
                            in .braid/token): on the embedded database always (default: 0, a free one, written
                            to .braid/api.json: the project's other commands reach it there), on Postgres when given
  --shutdown-timeout SECS   how long running handlers get to finish at shutdown (default: 10)
${recoveryHelp}
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const {
    values,
    help: wantsHelp,
    positionals,
  } = parse(
    argv,
    ['handlers', 'queues', 'prefetch', 'database', 'schema', 'port', 'metrics-port', 'metrics-host', 'metrics-token', 'shutdown-timeout', ...RECOVERY_OPTIONS],
    usage,
  );
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`worker takes no arguments (usage: ${usage})`);
  const { handlersPath, queues, prefetch, stopMs, tuning, embedded, port, metricsPort, metricsToken } = workerOptions(io, values);
  const http = httpKinds(io);
  const handlers = withHttpKinds(handlersPath === undefined ? {} : await loadHandlersArg(handlersPath), http);
  const db = await openDatabase(io, { url: values.database, schema: values.schema });
  const log = consoleLogger((line) => io.stdout(`${line}\n`));
  const undoSurvive = surviveUnhandledRejections(log);
  const schema = schemaName(io, values.schema);
  let rt: Runtime | undefined;
  let unpublish: () => void = () => undefined;
  let api: ApiServer | undefined;
  let metricsServer: { close(): Promise<void> } | undefined;
  try {
    const reader = createRuntime({ database: db, schema });
    await reader.migrate();
    // the kinds and queues of the current versions, and of every older version that workflows still run on
    const versions = await reader.deployBaseline();
    warnMissingKinds(log, versions, handlers);
    let metrics: Metrics | undefined;
    if (metricsPort !== undefined) {
      const Metrics = await loadMetrics();
      metrics = new Metrics(db, schema);
    }
    rt = createRuntime({
      metrics,
      database: db,
      schema,
      handlers,
      queues: queues ?? queuesOf(versions.filter((v) => v.current || (v.running ?? 0) > 0)),
      prefetch: values.prefetch === undefined ? project(io).config?.worker.prefetch : prefetch,
      taskLog: { maxLines: project(io).config?.worker.logLines, maxBytes: project(io).config?.worker.logBytes },
      logger: log,
      ...tuning,
    });
    await rt.startWorker();
    if (embedded || values.port !== undefined) {
      api = await listenOn(port, () => startApiServer(rt!, apiOptions(io, port, log)));
      if (embedded) unpublish = publishApi(io, api);
    }
    if (metrics && metricsPort !== undefined) {
      const { serveMetrics } = await import('../../api/metrics-server.js');
      const served = await listenOn(metricsPort, () => serveMetrics(metrics, metricsPort, values['metrics-host'] ?? '127.0.0.1', log, { token: metricsToken }));
      metricsServer = served;
      log.info(`metrics at ${served.url}`);
    }
    // listening before saying it runs: a SIGTERM sent on reading that line finds the graceful stop in place
    const stopSignal = waitForStopSignal();
    log.info(`worker ${rt.id} running ${Object.keys(handlers).length} kind(s): ${Object.keys(handlers).sort().join(', ')}`);
    if (!versions.some((v) => v.current)) log.warn(nothingRegistered(embedded));
    const signal = await stopSignal;
    log.info(`${signal}: stopping (running handlers get ${stopMs / 1000} s)`);
    await rt.stop(stopMs);
    log.info('stopped');
    return EXIT.ok;
  } catch (error) {
    throw commandFailure(error);
  } finally {
    // a database (or a client) that hangs cannot hold a worker asked to stop: a quarter of a second at most for these
    const closing = Date.now() + 250;
    await within(closing, api?.close() ?? Promise.resolve());
    await within(closing, metricsServer?.close() ?? Promise.resolve());
    unpublish();
    await within(closing, db.close());
    undoSurvive();
  }
}

/** The options given, checked before anything starts. */
function workerOptions(io: Io, values: Record<string, string | undefined>) {
  // a worker of HTTP kinds alone needs no handlers module
  const served = Object.values(project(io).config?.kinds ?? {}).some((k) => k.http);
  const handlersPath = served ? handlersModule(io, values.handlers) : requiredHandlers(io, values.handlers, usage);
  const queues = queuesOption(io, values.queues);
  const prefetch = values.prefetch === undefined ? 0 : Number(values.prefetch);
  if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > 10_000) throw new UsageError('--prefetch must be a whole number from 0 to 10000');
  const stopMs = shutdownMs(io, values['shutdown-timeout']);
  // how it recovers from failures, and how it signs callback links
  const tuning = { ...recoveryOptions(io, values), ...linkOptions(io, values.database) };
  const embedded = !databaseUrl(io, values.database);
  const port = parsePort(values.port, 0);
  const metricsPort = values['metrics-port'] === undefined ? undefined : parsePort(values['metrics-port'], 0);
  if (values['metrics-host'] !== undefined && metricsPort === undefined) throw new UsageError('--metrics-host needs --metrics-port');
  const metricsToken = values['metrics-token'] ?? process.env.BRAID_METRICS_TOKEN;
  if (values['metrics-token'] !== undefined && metricsPort === undefined) throw new UsageError('--metrics-token needs --metrics-port');
  if (metricsToken !== undefined && metricsToken.length < 16) throw new UsageError('--metrics-token must be at least 16 characters');
  return { handlersPath, queues, prefetch, stopMs, tuning, embedded, port, metricsPort, metricsToken };
}

/** Every queue the definitions use, and `default`, at concurrency 10. */
export function queuesOf(definitions: readonly { normalized: NormalizedDefinition }[]): Record<string, number> {
  const names = new Set(['default']);
  for (const d of definitions) for (const t of d.normalized.tasks) names.add(t.queue);
  return Object.fromEntries([...names].sort().map((q) => [q, DEFAULT_CONCURRENCY]));
}

/**
 * Kinds that this handlers module lacks: those the current versions use, and those that running workflows on
 * older versions still need. Their tasks would wait, so say so now.
 */
export function warnMissingKinds(log: Logger, versions: readonly BaselineVersion[], handlers: Handlers): void {
  const missing = new Map<string, { names: Set<string>; running: string[] }>();
  const entry = (kind: string) => {
    let e = missing.get(kind);
    if (!e) missing.set(kind, (e = { names: new Set(), running: [] }));
    return e;
  };
  for (const v of versions) {
    const lacks = (kind: string) => kind !== START_KIND && !(kind in handlers);
    if (v.current) for (const t of v.normalized.tasks) if (lacks(t.kind)) entry(t.kind).names.add(v.name);
    if (v.current) continue;
    for (const [kind, n] of Object.entries(v.kinds ?? {})) if (lacks(kind)) entry(kind).running.push(`${n} running ${v.name} on ${v.hash.slice(0, 12)}`);
  }
  for (const [kind, { names, running }] of [...missing].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const who = [
      ...(names.size > 0 ? [`used by ${[...names].sort().join(', ')}`] : []),
      ...(running.length > 0 ? [`needed by ${running.join(', ')}`] : []),
    ].join('; ');
    log.warn(`no handler for kind "${kind}" (${who}): its tasks wait for a worker that has one`);
  }
}

/** What a worker with nothing registered tells its user to do (register cannot open an embedded database a worker holds). */
function nothingRegistered(embedded: boolean): string {
  return embedded
    ? 'no workflow is registered yet: this process holds the embedded database, so stop it, run `braid register` and start it again ' +
        '(or run `braid dev`, which registers as you save)'
    : 'no workflow is registered yet: run `braid register` to deploy the definitions';
}

/** The worker's API server: the project's token, its signed events, and its config's checks for a register. */
function apiOptions(io: Io, port: number, log: Logger): ApiServerOptions {
  return { port, token: projectToken(io), log, eventSignatures: eventSignatures(io), projectChecks: projectChecks(io) };
}
