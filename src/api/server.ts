import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompileError } from '../compiler/compile-error.js';
import type { EventsConfig, KindsConfig } from '../compiler/validate.js';
import { httpStatus, isCallerError } from '../error-codes.js';
import { BatchRowError, errorMessage, isTransientError, userTokenId } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Logger } from '../runtime/telemetry/log.js';
import type { Metrics } from '../runtime/telemetry/metrics.js';
import type { Principal } from '../runtime/wire/index.js';
import { serveUi } from '../ui/assets.js';
import { CALLBACK_PREFIX, serveCallback } from './callback-routes.js';
import { type EventSignature, serveSignedEvent } from './event-routes.js';
import type { DevState } from './events.js';
import { ChangeFeed } from './feed.js';
import type { Caller } from './handler-types.js';
import { HttpError, send } from './http.js';
import { sendMetrics } from './metrics-server.js';
import { RateLimit } from './rate-limit.js';
import { API_PREFIX, ROUTES, SERVER_ROUTES } from './route-table.js';
import { route } from './routes.js';
import { authorize } from './scope.js';
import { Guard } from './security.js';

export interface ApiServer {
  url: string;
  token: string;
  /** The Host header values it answers. */
  hosts: string[];
  /** Tells the UI's streams that the dev state (reloads) changed. */
  devChanged(): void;
  close(): Promise<void>;
}

export interface ApiServerOptions {
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default: a random one. */
  token?: string;
  /** Host header values accepted (default: the loopback names, and beyond loopback this machine's own names and addresses). */
  allowedHosts?: readonly string[];
  definitionsDir?: string;
  /** The project config's kinds and events: a register over HTTP validates with them. */
  projectChecks?: { kinds?: KindsConfig; events?: EventsConfig };
  dev?: () => DevState;
  heartbeatMs?: number;
  pollMs?: number;
  minIntervalMs?: number;
  /** How long writers keep notifying after the last event stream closed (default 30 s). */
  listenLingerMs?: number;
  /** Where internal errors are reported (their text never goes to the client). */
  log?: Logger;
  /** Served at GET /metrics (Prometheus text), with the API's token like everything else. */
  metrics?: Metrics;
  /**
   * Events whose webhooks are signed (the project config's events.NAME.signature), as they read now (a config
   * changed since the start counts): taken on the signature, not the token.
   */
  eventSignatures?: Readonly<Record<string, EventSignature>> | (() => Readonly<Record<string, EventSignature>>);
}

/** The server's own token, until a user exists: an admin, so a new deployment can add its first users. */
const BOOTSTRAP_ADMIN: Principal = { name: 'bootstrap', role: 'admin', workflows: null, bootstrap: true };

/**
 * Who a request is — a user (not revoked, not expired), or the bootstrap admin while no user exists — and how to
 * ask again whether that still stands (by the token's id: the secret was proved once).
 */
async function who(rt: Runtime, guard: Guard, req: IncomingMessage): Promise<Caller | undefined> {
  const c = guard.credentials(req);
  if (!c) return undefined;
  if (c.kind === 'server') return (await rt.users.any()) ? undefined : { principal: BOOTSTRAP_ADMIN, stillValid: async () => !(await rt.users.any()) };
  const principal = c.kind === 'user' ? await rt.users.authenticate(c.token) : await rt.users.byTokenId(c.tokenId);
  if (!principal) return undefined;
  const tokenId = c.kind === 'user' ? userTokenId(c.token) : c.tokenId;
  return { principal, stillValid: async () => tokenId !== undefined && (await rt.users.byTokenId(tokenId)) !== undefined };
}

/** POST /api/session: the cookie that lets the page's requests (EventSource included) carry who it is. */
function startSession(guard: Guard, req: IncomingMessage, res: ServerResponse): void {
  const c = guard.credentials(req);
  const tokenId = c?.kind === 'user' ? userTokenId(c.token) : c?.kind === 'session' ? c.tokenId : undefined;
  res.writeHead(204, { 'set-cookie': guard.sessionCookie(tokenId), 'cache-control': 'no-store' });
  res.end();
}

/** Answers an error the caller can act on (its status, code and words); false for any other, which is internal. */
function answeredError(res: ServerResponse, error: unknown): boolean {
  // a body left unread (too large) would be taken for the next request on this connection: close it
  if (error instanceof HttpError) send(res, error.status, { error: error.message, code: error.code }, error.status === 413 ? { connection: 'close' } : {});
  else if (error instanceof CompileError) send(res, httpStatus(error.code), { error: 'inputs do not fit', code: error.code, diagnostics: error.diagnostics });
  // a batch's row at fault: which row, and what its own error says
  else if (error instanceof BatchRowError && isCallerError(error)) {
    const cause = error.cause;
    send(res, httpStatus(error.code), {
      error: cause instanceof CompileError ? 'inputs do not fit' : cause instanceof Error ? cause.message : String(cause),
      code: error.code,
      row: error.row,
      ...(cause instanceof CompileError ? { diagnostics: cause.diagnostics } : {}),
    });
  }
  // a busy workflow is worth another try: say when
  else if (isCallerError(error))
    send(res, httpStatus(error.code), { error: error.message, code: error.code }, error.code === 'workflow_busy' ? { 'retry-after': '1' } : {});
  else return false;
  return true;
}

/**
 * The HTTP server of a braid process: the JSON API under /api (the CLI's other commands use it against an
 * embedded database this process holds; the web UI uses it everywhere), server-sent events, and the UI.
 */
export async function startApiServer(rt: Runtime, options: ApiServerOptions = {}): Promise<ApiServer> {
  const token = options.token ?? randomBytes(24).toString('hex');
  const host = options.host ?? '127.0.0.1';
  const guard = new Guard(token, { host, allowedHosts: options.allowedHosts });
  const feed = new ChangeFeed(options.listenLingerMs);
  const callbackLimit = new RateLimit(30, 60_000);
  await feed.start(rt.db, rt.schema);
  const context = {
    rt,
    feed,
    dev: options.dev,
    definitionsDir: options.definitionsDir,
    projectChecks: options.projectChecks,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    pollMs: options.pollMs ?? 5_000,
    minIntervalMs: options.minIntervalMs ?? 100,
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // the client gets no raw database or stack text: the operator's log has it
      const unavailable = isTransientError(error);
      options.log?.warn(
        `API ${req.method ?? ''} ${(req.url ?? '').slice(0, 200)}: ${unavailable ? 'database unavailable' : 'internal error'}: ${errorMessage(error)}`,
      );
      const code = unavailable ? 'database_unavailable' : 'internal';
      // the cause of an unavailable database (a full disk, too many connections) is the caller's to know too
      const cause = errorMessage(error).split('\n')[0].slice(0, 200);
      if (!res.headersSent) send(res, httpStatus(code), { error: unavailable ? `the database is unavailable (${cause}); try again` : 'internal error', code });
      else res.end();
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      guard.checkHost(req);
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname === SERVER_ROUTES.metrics.path) {
        // a server without metrics (a worker's local API) says so, rather than serve the UI's page
        if (!options.metrics || req.method !== 'GET') throw new HttpError(404, 'no metrics here: braid worker --metrics-port serves them');
        const caller = await who(rt, guard, req);
        if (!caller) throw new HttpError(401, 'missing, wrong, revoked or expired token');
        await authorize(rt, SERVER_ROUTES.metrics, {}, caller.principal);
        return sendMetrics(options.metrics, res, options.log);
      }
      // a link is its own capability: no token, the Host check above, and a rate per link
      if (url.pathname.startsWith(CALLBACK_PREFIX)) return await serveCallback(rt, req, res, url, callbackLimit);
      if (url.pathname !== API_PREFIX && !url.pathname.startsWith(`${API_PREFIX}/`)) {
        if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'the UI is read with GET');
        return serveUi(url.pathname, res);
      }
      // a provider's webhook carries its signature, not the token, and is no browser page
      if (options.eventSignatures && (await serveSignedEvent(rt, options.eventSignatures, req, res, url))) return;
      if (req.method !== 'GET' && req.method !== 'HEAD') guard.checkMutation(req);
      const caller = await who(rt, guard, req);
      if (!caller) throw new HttpError(401, 'missing, wrong, revoked or expired token');
      if (url.pathname === ROUTES.session.path && req.method === ROUTES.session.method) return startSession(guard, req, res);
      await route(context, req, res, url, caller);
    } catch (error) {
      if (!answeredError(res, error)) throw error;
    }
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const hosts = guard.listening(port);
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shownHost}:${port}`,
    token,
    hosts,
    devChanged: () => feed.devChanged(),
    close: async () => {
      await feed.stop();
      // event streams stay open until their clients leave: end them
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
