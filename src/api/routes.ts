import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidCursorError, parseTraceParent } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import { DEFAULT_RETRY_MODE, type RetryMode, roleAllows } from '../runtime/wire/index.js';
import { actorFrom } from './acting.js';
import { checkBody } from './body-check.js';
import { definitionHandlers } from './definition-routes.js';
import { eventHandlers } from './event-routes.js';
import { listEvents, workflowEvents } from './events.js';
import type { Call, Caller, RouteContext, RouteHandlers } from './handler-types.js';
import { cursorParam, HttpError, integerParam, pathParts, readJson, send } from './http.js';
import { bulkHandlers, pauseHandlers, taskHandlers } from './operation-routes.js';
import { matchRoute, type OperationContract, ROUTES } from './route-table.js';
import { scheduleHandlers } from './schedule-routes.js';
import { authorize, checkName, visible } from './scope.js';
import { SearchParamError, searchFromParams } from './search-params.js';
import { streamHandlers } from './stream-routes.js';

/** The JSON API under /api (snake_case), dispatched by the route table; 404 for a method and path it does not have. */
export async function route(c: RouteContext, req: IncomingMessage, res: ServerResponse, url: URL, caller: Caller): Promise<void> {
  const { principal } = caller;
  const method = req.method ?? 'GET';
  const match = matchRoute(method, pathParts(url.pathname));
  if (!match || match.route === 'session') throw new HttpError(404, `no route ${method} ${url.pathname}`);
  const op: OperationContract = ROUTES[match.route];
  await authorize(c.rt, op, match.params, principal);
  let body: Record<string, unknown> = {};
  // an event posted to its name is its payload, read raw by its handler (a signature covers the bytes)
  if (op.method === 'POST' && match.route !== 'emitNamedEvent') {
    body = await readJson(req);
    checkBody(op.body, body);
  }
  try {
    await HANDLERS[match.route](c, { req, res, url, params: match.params, body, principal, caller });
  } catch (error) {
    if (error instanceof InvalidCursorError) throw new HttpError(400, error.message, error.code);
    throw error;
  }
}

function listFilter(url: URL): Parameters<Runtime['listWorkflows']>[0] {
  try {
    return { ...searchFromParams(url.searchParams), limit: integerParam(url, 'limit', 500) };
  } catch (error) {
    if (error instanceof SearchParamError) throw new HttpError(400, error.message);
    throw error;
  }
}

const HANDLERS: RouteHandlers = {
  ...definitionHandlers,
  ...scheduleHandlers,
  ...pauseHandlers,
  ...taskHandlers,
  ...bulkHandlers,
  ...eventHandlers,
  ...streamHandlers,
  events: (c, { req, res, url, caller }) => listEvents(req, res, c, listFilter(url), caller),
  me: async (_c, { res, principal }) => send(res, 200, principal),
  audit: async (c, { res, url, principal }) => {
    const p = (k: string) => url.searchParams.get(k) ?? undefined;
    const since = p('since') === undefined ? undefined : new Date(p('since')!);
    if (since && Number.isNaN(since.getTime())) throw new HttpError(400, '"since" is an ISO 8601 time');
    if (p('before') !== undefined && !/^[0-9]{1,18}$/.test(p('before')!)) throw new HttpError(400, '"before" is an audit line id');
    const lines = await c.rt.auditTrail({
      actor: p('actor'),
      action: p('action'),
      target: p('target'),
      since,
      before: p('before'),
      limit: integerParam(url, 'limit', 1000),
      // a user of some names sees the lines of their workflows only
      workflows: principal.workflows,
    });
    send(res, 200, { lines });
  },
  dev: async (c, { res }) => send(res, 200, c.dev?.() ?? { definitions: null, handlers: null }),
  baseline: async (c, { res, url, principal }) => {
    const names = url.searchParams.get('names');
    const started = url.searchParams.get('started') === '1';
    const versions = await c.rt.deployBaseline(names === null ? undefined : names.split(',').filter(Boolean), { started });
    send(res, 200, { versions: versions.filter((v) => visible(principal, v.name)) });
  },
  workflows: async (c, { res, url, principal }) => {
    const page = await c.rt.listWorkflows(listFilter(url));
    // a scoped user's page shows its names only (a page may come out shorter; the cursor goes on)
    page.workflows = page.workflows.filter((w) => visible(principal, w.name));
    // numbered like the streams' snapshots, so a page polling as a fallback never goes back in time
    send(res, 200, page, { 'x-braid-event-id': String(c.feed.clock.next()) });
  },
  start: async (c, call) => {
    const { req, res } = call;
    const b = call.body as { name: string; inputs?: unknown; id?: string };
    checkName(call.principal, b.name);
    // only the folder this server was started with: a client never names files on the server
    if (c.definitionsDir) await c.rt.registerDefinitions(c.definitionsDir);
    const started = await c.rt.startWorkflow(b.name, b.inputs ?? {}, { id: b.id, ...traceHeaders(req), ...actorFrom(b, call) });
    return started.existing ? send(res, 200, started) : send(res, 201, { id: started.id });
  },
  startBatch,
  status: async (c, call) => {
    const { res, url, params, principal } = call;
    const reveal = url.searchParams.get('reveal') === '1';
    if (reveal && !roleAllows(principal.role, 'admin'))
      throw new HttpError(
        403,
        `revealing sensitive values needs the admin role; ${principal.name} is ${principal.role === 'viewer' ? 'a' : 'an'} ${principal.role}`,
      );
    const status = await c.rt.workflow(params.id).status(reveal ? { reveal, ...actorFrom({}, call) } : {});
    send(res, 200, status, { 'x-braid-event-id': String(c.feed.clock.next()) });
  },
  workflowEvents: (c, { req, res, params, caller }) => workflowEvents(req, res, c, params.id, caller),
  cancel: async (c, call) => send(call.res, 200, await c.rt.workflow(call.params.id).cancel(actorFrom(call.body, call))),
  retry: async (c, call) => {
    const { res, params, body: b } = call;
    const how = { mode: (b.mode ?? DEFAULT_RETRY_MODE) as RetryMode, resetHistory: b.reset_history === true, onCurrent: b.on_current === true };
    send(res, 200, await c.rt.workflow(params.id).retry({ ...how, ...actorFrom(b, call) }));
  },
  emit,
  signals: async (c, { res, url, params }) => {
    const page = await c.rt.workflow(params.id).signals.list({
      attempt: integerParam(url, 'attempt'),
      key: url.searchParams.get('key') ?? undefined,
      cursorId: cursorParam(url, 'cursor_id'),
      limit: integerParam(url, 'limit', 1000),
      redact: true,
    });
    send(res, 200, page);
  },
  logs: async (c, { res, url, params }) => {
    const after = url.searchParams.get('after') ?? undefined;
    if (after !== undefined && !/^[0-9]{1,18}$/.test(after)) throw new HttpError(400, '"after" is a log line id from a previous page');
    const attempt = integerParam(url, 'attempt');
    if (attempt === 0) throw new HttpError(400, '"attempt" is a whole number from 1');
    const task = url.searchParams.get('task') ?? undefined;
    send(res, 200, await c.rt.workflow(params.id).logs({ task, attempt, after, limit: integerParam(url, 'limit', 5000) }));
  },
  wait: async (c, { res, url, params }) => {
    const wf = c.rt.workflow(params.id);
    const timeoutMs = integerParam(url, 'timeout_ms', 600_000) ?? 30_000;
    await wf.waitUntilFinal({ timeoutMs, pollMs: 200 }).catch(() => undefined);
    // shown to the caller: sensitive values redacted
    send(res, 200, { workflow: await wf.load({ redact: true }) });
  },
  diagnostics: async (c, { res, url, params }) =>
    send(res, 200, await c.rt.workflow(params.id).waitDiagnostics(params.task, { signalScanLimit: integerParam(url, 'signal_scan_limit') })),
  callbackLinks: async (c, { req, res, params }) => {
    // links answered where this request came, unless the runtime knows its public URL
    const links = await c.rt.callbacks.links(params.id, params.task, params.term, { baseUrl: c.rt.internals.publicUrl ?? `http://${req.headers.host}` });
    send(res, 200, { links, description: await c.rt.callbacks.description(params.id, params.task, params.term) });
  },
  taskSignals: async (c, { res, url, params }) => {
    const page = await c.rt.workflow(params.id).signals.listForTask(params.task, {
      key: url.searchParams.get('key') ?? undefined,
      cursorId: cursorParam(url, 'cursor_id'),
      limit: integerParam(url, 'limit', 1000),
      redact: true,
    });
    send(res, 200, page);
  },
};

/** POST /api/workflows/batch: many workflows of one name started at once, all or nothing. */
async function startBatch(c: RouteContext, call: Call): Promise<void> {
  const { req, res } = call;
  const b = call.body as { name: string; workflows: { inputs?: unknown; id?: string }[] };
  checkName(call.principal, b.name);
  if (c.definitionsDir) await c.rt.registerDefinitions(c.definitionsDir);
  const typed = b.workflows;
  const started = await c.rt.startMany(
    b.name,
    typed.map((w) => w.inputs ?? {}),
    { ids: typed.map((w) => w.id), ...traceHeaders(req), ...actorFrom(b, call) },
  );
  send(res, started.some((s) => !s.existing) ? 201 : 200, { workflows: started });
}

/** POST /api/workflows/:id/signals. */
async function emit(c: RouteContext, call: Call): Promise<void> {
  const { req, res, params, body: b } = call;
  const result = await c.rt.workflow(params.id).signals.emit(b.key as string, b.payload ?? null, {
    idempotencyKey: b.idempotency_key as string | undefined,
    source: b.source,
    attempt: b.attempt as number | undefined,
    anyKey: b.any_key === true,
    ...traceHeaders(req),
    ...actorFrom(b, call),
  });
  send(res, result.replayed ? 200 : 201, result);
}

/**
 * The caller's W3C trace context headers, which the workflow's or signal's span continues; a malformed
 * traceparent is ignored, as the W3C recommendation says (the request still runs, in a trace of its own).
 */
function traceHeaders(req: IncomingMessage): { traceparent?: string; tracestate?: string } {
  const traceparent = req.headers.traceparent;
  if (typeof traceparent !== 'string' || !parseTraceParent(traceparent)) return {};
  const tracestate = req.headers.tracestate;
  return { traceparent, ...(typeof tracestate === 'string' && tracestate ? { tracestate } : {}) };
}
