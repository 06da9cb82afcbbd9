import type { IncomingMessage, ServerResponse } from 'node:http';
import { diffDefinitions } from '../deploy/diff.js';
import { InvalidCursorError, parseTraceParent } from '../runtime/index.js';

import type { Runtime } from '../runtime/runtime.js';

import { MAX_START_BATCH } from '../runtime/wire/index.js';
import { listEvents, type StreamContext, workflowEvents } from './events.js';
import { cursorParam, HttpError, integerParam, pathParts, readJson, send } from './http.js';
import { scheduleRoutes } from './schedule-routes.js';
import { SearchParamError, searchFromParams } from './search-params.js';

export interface RouteContext extends StreamContext {
  /** Registered before a start that names it (the CLI's `start --definitions`). */
  definitionsDir?: string;
}

function listFilter(url: URL): Parameters<Runtime['listWorkflows']>[0] {
  try {
    return { ...searchFromParams(url.searchParams), limit: integerParam(url, 'limit', 500) };
  } catch (error) {
    if (error instanceof SearchParamError) throw new HttpError(400, error.message);
    throw error;
  }
}

/** The JSON API under /api (snake_case); answers 404 for a path it does not know. */
export async function route(c: RouteContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const { rt } = c;
  const parts = pathParts(url.pathname);
  const method = req.method ?? 'GET';
  const [, resource, id] = parts;
  try {
    if (resource === 'events' && parts.length === 2 && method === 'GET') return await listEvents(req, res, c, listFilter(url));
    if (resource === 'dev' && parts.length === 2 && method === 'GET') return send(res, 200, c.dev?.() ?? { definitions: null, handlers: null });
    if (resource === 'definitions') return await definitions(c, req, res, method, parts, url);
    if (resource === 'schedules') return await scheduleRoutes(rt, req, res, method, parts, url);
    if (resource === 'deploy' && id === 'baseline' && parts.length === 3 && method === 'GET') {
      const names = url.searchParams.get('names');
      const started = url.searchParams.get('started') === '1';
      return send(res, 200, { versions: await rt.deployBaseline(names === null ? undefined : names.split(',').filter(Boolean), { started }) });
    }
    if (resource === 'workflows' && parts.length === 2) return await workflowsRoutes(c, req, res, method, url);
    if (resource === 'workflows' && id === 'batch' && parts.length === 3 && method === 'POST') return await startBatch(c, req, res);
    if (resource === 'workflows' && id) return await workflowRoutes(c, req, res, method, parts, url);
    throw new HttpError(404, `no route ${method} ${url.pathname}`);
  } catch (error) {
    if (error instanceof InvalidCursorError) throw new HttpError(400, error.message, error.code);
    throw error;
  }
}

/** GET and POST /api/workflows. */
async function workflowsRoutes(c: RouteContext, req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
  const { rt } = c;
  if (method === 'GET') {
    const page = await rt.listWorkflows(listFilter(url));
    // numbered like the streams' snapshots, so a page polling as a fallback never goes back in time
    return send(res, 200, page, { 'x-braid-event-id': String(c.feed.clock.next()) });
  }
  if (method === 'POST') {
    const b = await readJson(req);
    if (typeof b.name !== 'string') throw new HttpError(400, '"name" is required');
    if (b.id !== undefined && typeof b.id !== 'string') throw new HttpError(400, '"id" is a string');
    // only the folder this server was started with: a client never names files on the server
    if (c.definitionsDir) await rt.registerDefinitions(c.definitionsDir);
    const started = await rt.startWorkflow(b.name, b.inputs ?? {}, { id: b.id, ...traceHeaders(req) });
    return started.existing ? send(res, 200, started) : send(res, 201, { id: started.id });
  }
  throw new HttpError(404, `no route ${method} ${url.pathname}`);
}

/** POST /api/workflows/batch: many workflows of one name started at once, all or nothing. */
async function startBatch(c: RouteContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { rt } = c;
  const b = await readJson(req);
  if (typeof b.name !== 'string') throw new HttpError(400, '"name" is required');
  if (!Array.isArray(b.workflows)) throw new HttpError(400, '"workflows" is a list of { inputs, id? }');
  if (b.workflows.length > MAX_START_BATCH) throw new HttpError(400, `"workflows" holds at most ${MAX_START_BATCH} rows, not ${b.workflows.length}`);
  const rows = b.workflows as unknown[];
  for (const [row, w] of rows.entries()) {
    if (w === null || typeof w !== 'object' || Array.isArray(w)) throw new HttpError(400, `"workflows"[${row}] is an object { inputs, id? }`);
    const { id: key } = w as { id?: unknown };
    if (key !== undefined && typeof key !== 'string') throw new HttpError(400, `"workflows"[${row}].id is a string`);
  }
  if (c.definitionsDir) await rt.registerDefinitions(c.definitionsDir);
  const typed = rows as { inputs?: unknown; id?: string }[];
  const started = await rt.startMany(
    b.name,
    typed.map((w) => w.inputs ?? {}),
    { ids: typed.map((w) => w.id), ...traceHeaders(req) },
  );
  return send(res, started.some((s) => !s.existing) ? 201 : 200, { workflows: started });
}

/** /api/workflows/:id and what lies under it. */
async function workflowRoutes(c: RouteContext, req: IncomingMessage, res: ServerResponse, method: string, parts: string[], url: URL): Promise<void> {
  const { rt } = c;
  const [, , id, action, task, sub] = parts;
  const wf = rt.workflow(id);
  if (parts.length === 3 && method === 'GET') {
    const status = await wf.status();
    return send(res, 200, status, { 'x-braid-event-id': String(c.feed.clock.next()) });
  }
  if (action === 'events' && parts.length === 4 && method === 'GET') return await workflowEvents(req, res, c, id);
  if (action === 'cancel' && parts.length === 4 && method === 'POST') return send(res, 200, await wf.cancel());
  if (action === 'retry' && parts.length === 4 && method === 'POST') {
    const b = await readJson(req);
    const mode = b.mode ?? 'all';
    if (mode !== 'all' && mode !== 'failed_only' && mode !== 'failed_and_downstream')
      throw new HttpError(400, '"mode" is all, failed_only or failed_and_downstream');
    if (b.reset_history !== undefined && typeof b.reset_history !== 'boolean') throw new HttpError(400, '"reset_history" is a boolean');
    if (b.on_current !== undefined && typeof b.on_current !== 'boolean') throw new HttpError(400, '"on_current" is a boolean');
    return send(res, 200, await wf.retry({ mode, resetHistory: b.reset_history === true, onCurrent: b.on_current === true }));
  }
  if (action === 'signals' && parts.length === 4) return await signalRoutes(wf, req, res, method, url);
  if (action === 'logs' && parts.length === 4 && method === 'GET') {
    const after = url.searchParams.get('after') ?? undefined;
    if (after !== undefined && !/^[0-9]{1,18}$/.test(after)) throw new HttpError(400, '"after" is a log line id from a previous page');
    const attempt = integerParam(url, 'attempt');
    if (attempt === 0) throw new HttpError(400, '"attempt" is a whole number from 1');
    return send(res, 200, await wf.logs({ task: url.searchParams.get('task') ?? undefined, attempt, after, limit: integerParam(url, 'limit', 5000) }));
  }
  if (action === 'tasks' && task && parts.length === 6 && method === 'GET') {
    if (sub === 'diagnostics') return send(res, 200, await wf.waitDiagnostics(task, { signalScanLimit: integerParam(url, 'signal_scan_limit') }));
    if (sub === 'signals') {
      return send(
        res,
        200,
        await wf.signals.listForTask(task, {
          key: url.searchParams.get('key') ?? undefined,
          cursorId: cursorParam(url, 'cursor_id'),
          limit: integerParam(url, 'limit', 1000),
        }),
      );
    }
  }
  if (action === 'wait' && parts.length === 4 && method === 'GET') {
    const timeoutMs = integerParam(url, 'timeout_ms', 600_000) ?? 30_000;
    const w = await wf.waitUntilFinal({ timeoutMs, pollMs: 200 }).catch(() => undefined);
    return send(res, 200, { workflow: w ?? (await wf.load()) });
  }
  throw new HttpError(404, `no route ${method} ${url.pathname}`);
}

/** POST and GET /api/workflows/:id/signals. */
async function signalRoutes(wf: ReturnType<Runtime['workflow']>, req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
  if (method === 'POST') {
    const b = await readJson(req);
    if (typeof b.key !== 'string') throw new HttpError(400, '"key" is required');
    if (b.attempt !== undefined && typeof b.attempt !== 'number') throw new HttpError(400, '"attempt" is a number');
    if (b.idempotency_key !== undefined && typeof b.idempotency_key !== 'string') throw new HttpError(400, '"idempotency_key" is a string');
    if (b.any_key !== undefined && typeof b.any_key !== 'boolean') throw new HttpError(400, '"any_key" is a boolean');
    const result = await wf.signals.emit(b.key, b.payload ?? null, {
      idempotencyKey: b.idempotency_key as string | undefined,
      source: b.source,
      attempt: b.attempt as number | undefined,
      anyKey: b.any_key === true,
      ...traceHeaders(req),
    });
    return send(res, result.replayed ? 200 : 201, result);
  }
  if (method === 'GET') {
    return send(
      res,
      200,
      await wf.signals.list({
        attempt: integerParam(url, 'attempt'),
        key: url.searchParams.get('key') ?? undefined,
        cursorId: cursorParam(url, 'cursor_id'),
        limit: integerParam(url, 'limit', 1000),
      }),
    );
  }
  throw new HttpError(404, `no route ${method} ${url.pathname}`);
}

/**
 * GET /api/definitions, GET /api/definitions/:name[?hash=]: versions, validation state, and one version's
 * definition (a hash or a unique prefix); GET .../:name/versions with drain states; GET .../:name/diff?from=&to=
 * the classified changes between two versions; POST .../:name/upgrade moves running workflows.
 */
async function definitions(c: RouteContext, req: IncomingMessage, res: ServerResponse, method: string, parts: string[], url: URL): Promise<void> {
  if (method === 'POST' && parts.length === 4 && parts[3] === 'upgrade') {
    const b = await readJson(req);
    for (const k of ['from', 'to'] as const) if (b[k] !== undefined && typeof b[k] !== 'string') throw new HttpError(400, `"${k}" is a version hash`);
    if (b.ids !== undefined && (!Array.isArray(b.ids) || !b.ids.every((x: unknown) => typeof x === 'string') || b.ids.length > 10_000))
      throw new HttpError(400, '"ids" is a list of workflow ids');
    for (const k of ['dry_run', 'cancel_removed', 'drop_evidence'] as const)
      if (b[k] !== undefined && typeof b[k] !== 'boolean') throw new HttpError(400, `"${k}" is a boolean`);
    return send(
      res,
      200,
      await c.rt.upgrade(parts[2], {
        from: b.from as string | undefined,
        to: b.to as string | undefined,
        ids: b.ids as string[] | undefined,
        dryRun: b.dry_run === true,
        cancelRemoved: b.cancel_removed === true,
        dropEvidence: b.drop_evidence === true,
      }),
    );
  }
  if (method !== 'GET') throw new HttpError(404, `no route ${method} ${url.pathname}`);
  if (parts.length === 4 && parts[3] === 'diff') {
    const from = url.searchParams.get('from') ?? undefined;
    const to = url.searchParams.get('to') ?? undefined;
    if (from === undefined) throw new HttpError(400, '"from" is the version to compare');
    const [a, b] = [await c.rt.version(parts[2], from), await c.rt.version(parts[2], to)];
    return send(res, 200, { name: parts[2], from: a.hash, to: b.hash, changes: diffDefinitions(a.normalized, b.normalized) });
  }
  const reload = c.dev?.().definitions ?? null;
  if (parts.length === 2) {
    const versions = await c.rt.definitionVersions();
    const byName = new Map<string, typeof versions>();
    for (const v of versions) byName.set(v.name, [...(byName.get(v.name) ?? []), v]);
    const list = [...byName].map(([name, vs]) => {
      const current = vs.find((v) => v.current) ?? vs[0];
      const file = current.file;
      const failing = reload?.failing.find((f) => f.name === name || (file !== null && f.file === file));
      return {
        name,
        current_hash: current.hash,
        file,
        valid: failing === undefined,
        diagnostics: reload ? reload.diagnostics.filter((d) => d.file === (failing?.file ?? file)) : [],
        versions: vs.map(({ hash, file: f, registered_at, current: isCurrent, running, state }) => ({
          hash,
          file: f,
          registered_at,
          current: isCurrent,
          running,
          state,
        })),
      };
    });
    return send(res, 200, { definitions: list, reload });
  }
  if (parts.length === 4 && parts[3] === 'versions') return send(res, 200, await c.rt.versions(parts[2]));
  if (parts.length === 3) {
    const hash = url.searchParams.get('hash') || undefined;
    const def = hash ? await c.rt.version(parts[2], hash) : await c.rt.definition(parts[2]);
    if (!def) throw new HttpError(404, `no registered definition ${parts[2]}`, 'definition_not_found');
    return send(res, 200, def);
  }
  throw new HttpError(404, `no route ${method} ${url.pathname}`);
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
