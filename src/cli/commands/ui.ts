import { type ApiServer, startApiServer } from '../../api/server.js';
import { consoleLogger, createRuntime, loadMetrics, rateLimitedWarnings } from '../../runtime/index.js';
import { parse } from '../args.js';
import { databaseUrl, openDatabase, projectToken, publishApi } from '../backend.js';
import { commandFailure, EXIT, type Io, UsageError } from '../io.js';
import { eventSignatures, linkOptions, projectChecks, schemaName } from '../project.js';
import { USAGE } from '../usage.js';
import { listenOn, parsePort, waitForStopSignal } from './serve.js';

export const usage = USAGE.ui;

export const help = `Serve the web UI and its API alone (no worker), for operators. Prints its address.

Usage: ${usage}

  --port N                  the port (default: 4781; 0 picks a free one)
  --host ADDR               the address to listen on (default: 127.0.0.1)
  --allowed-host NAMES      Host header values to answer (default: the loopback names, and beyond loopback
                            this machine's own names and addresses; set it to the public name when serving
                            behind a proxy)
  --database URL            Postgres (default: DATABASE_URL, else the config's database, else .braid/)
  --schema NAME             the schema of braid's tables (default: braid)

Every API request needs the token: BRAID_UI_TOKEN when set (production), else the one in .braid/token.
Sign in once in the page, or open it as /#token=TOKEN.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values, help: wantsHelp, positionals } = parse(argv, ['port', 'host', 'allowed-host', 'database', 'schema'], usage);
  if (wantsHelp) {
    io.stdout(help);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`ui takes no arguments (usage: ${usage})`);
  const port = parsePort(values.port, 4781);
  const envToken = process.env.BRAID_UI_TOKEN;
  if (envToken !== undefined && envToken.length < 16) throw new UsageError('BRAID_UI_TOKEN must be at least 16 characters');
  const db = await openDatabase(io, { url: values.database, schema: values.schema });
  let api: ApiServer | undefined;
  let unpublish: () => void = () => undefined;
  try {
    const schema = schemaName(io, values.schema);
    // /metrics: the database's side (queue depth and age, workflows by name and state); workers count the rest
    const Metrics = await loadMetrics();
    const rt = createRuntime({ database: db, schema, ...linkOptions(io, values.database) });
    await rt.migrate();
    const metrics = new Metrics(db, schema);
    api = await listenOn(port, () =>
      startApiServer(rt, {
        eventSignatures: eventSignatures(io),
        projectChecks: projectChecks(io),
        metrics,
        port,
        host: values.host,
        token: envToken ?? projectToken(io),
        allowedHosts: values['allowed-host']
          ?.split(',')
          .map((h) => h.trim())
          .filter(Boolean),
        log: rateLimitedWarnings(consoleLogger((line) => io.stderr(`${line}\n`))),
      }),
    );
    if (!databaseUrl(io, values.database)) unpublish = publishApi(io, api);
    const stopSignal = waitForStopSignal();
    io.stdout(`${api.url}/\n`);
    // listening beyond loopback: say which names it answers, since a proxy's or a DNS name needs --allowed-host
    if (values.host !== undefined && !['127.0.0.1', 'localhost', '::1'].includes(values.host) && values['allowed-host'] === undefined) {
      io.stderr(`braid: listening on ${values.host}: answering the Host names ${api.hosts.join(', ')} only (--allowed-host NAME[:PORT],... for others)\n`);
    }
    await stopSignal;
    return EXIT.ok;
  } catch (error) {
    throw commandFailure(error);
  } finally {
    await api?.close();
    unpublish();
    await db.close();
  }
}
