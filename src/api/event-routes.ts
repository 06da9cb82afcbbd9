/**
 * Events over HTTP: POST /api/events ({ name, payload, id }) and POST /api/events/NAME (the body is the payload,
 * the event id from ?id= or Idempotency-Key) record an event and start what it triggers; GET /api/events/recent
 * lists the log; GET /api/workflows/:id/event names the event that started a workflow. An event the project
 * config signs (events.NAME.signature) is taken on its signature instead of the API's token: verified over the
 * raw body before anything is read or written, refused (401) without a valid one, and refused (409) when the same
 * signed request came already within its tolerance window.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ActorOptions } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import { actorFrom } from './acting.js';
import type { RouteHandlers } from './handler-types.js';
import { HttpError, integerParam, parseJsonBody, pathParts, readBody, send } from './http.js';
import { checkWebhook, type EventSignature } from './webhook-signatures.js';

export type { EventSignature };

const MAX_EVENT_BODY = 1024 * 1024;

export const eventHandlers: Pick<RouteHandlers, 'emitEvent' | 'emitNamedEvent' | 'eventList' | 'workflowEvent'> = {
  emitEvent: async (c, call) => {
    const b = call.body as { name: string; payload?: unknown; id?: string };
    const r = await c.rt.emit(b.name, b.payload ?? null, { id: b.id, ...actorFrom(b, call) });
    send(call.res, r.duplicate ? 200 : 201, r);
  },
  emitNamedEvent: async (c, call) => {
    const { req, res, url, params } = call;
    // the body is the payload: no reason rides along
    const r = await emitRaw(c.rt, params.name, await readBody(req, MAX_EVENT_BODY), req, url, actorFrom({}, call));
    send(res, r.duplicate ? 200 : 201, r);
  },
  eventList: async (c, { res, url }) => {
    const name = url.searchParams.get('name') ?? undefined;
    const before = url.searchParams.get('before') ?? undefined;
    send(res, 200, { events: await c.rt.events.list({ name, limit: integerParam(url, 'limit', 500), before, redact: true }) });
  },
  workflowEvent: async (c, { res, params }) => send(res, 200, { event: (await c.rt.events.startedBy(params.id)) ?? null }),
};

/** The event id a webhook names: ?id=, else its Idempotency-Key header; else the runtime makes one. */
function eventId(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers['idempotency-key'];
  return url.searchParams.get('id') ?? (typeof header === 'string' ? header : undefined);
}

async function emitRaw(
  rt: Runtime,
  name: string,
  raw: Buffer,
  req: IncomingMessage,
  url: URL,
  who: ActorOptions,
  receipt?: { digest: string; windowMs: number },
) {
  let payload: unknown = null;
  if (raw.length > 0) {
    payload = parseJsonBody(raw.toString('utf8'), 'the body is not JSON');
  }
  return rt.emit(name, payload, { id: eventId(req, url), ...who, receipt });
}

/**
 * POST /api/events/NAME of an event the config signs (as it reads now: a config changed since the server started
 * counts): the signature checked before anything else (401 and nothing recorded without a valid one), then
 * emitted with its digest, which a replay finds (409 event_replayed, nothing recorded). Returns false for a
 * request it is not for.
 */
export async function serveSignedEvent(
  rt: Runtime,
  given: Readonly<Record<string, EventSignature>> | (() => Readonly<Record<string, EventSignature>>),
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<boolean> {
  const parts = pathParts(url.pathname);
  if (req.method !== 'POST' || parts.length !== 3 || parts[0] !== 'api' || parts[1] !== 'events') return false;
  const signatures = typeof given === 'function' ? given() : given;
  if (!Object.hasOwn(signatures, parts[2])) return false;
  const event = parts[2];
  const raw = await readBody(req, MAX_EVENT_BODY);
  const check = checkWebhook(event, signatures[event], raw, req.headers);
  if (!check.ok) throw new HttpError(401, `the webhook of ${event} is refused: ${check.reason}`);
  const receipt = { digest: check.digest, windowMs: check.windowMs };
  const r = await emitRaw(rt, event, raw, req, url, { actor: `signed webhook ${event}`, address: req.socket.remoteAddress }, receipt);
  send(res, r.duplicate ? 200 : 201, r);
  return true;
}
