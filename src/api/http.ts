import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '../error-codes.js';
import type { Principal } from '../runtime/wire/index.js';

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'route_not_found',
  405: 'method_not_allowed',
  413: 'body_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** An answer other than 2xx about the HTTP exchange itself, with its message and code for the client. */
export class HttpError extends Error {
  readonly code: ErrorCode;
  constructor(
    readonly status: number,
    message: string,
    code?: ErrorCode,
    /** Headers the answer carries (Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
    this.code = code ?? BY_STATUS[status] ?? 'bad_request';
  }
}

export function send(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(payload));
}

const MAX_BODY = 10 * 1024 * 1024;

/** The request's body, refused past `max` bytes (413). */
export async function readBody(req: IncomingMessage, max = MAX_BODY): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new HttpError(413, `request body over ${max >= 1024 * 1024 ? `${max / 1024 / 1024} MB` : `${max / 1024} KiB`}`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** How deep a request's JSON may nest: far past any real payload, well short of what a recursive walk overflows on. */
export const JSON_DEPTH_LIMIT = 256;

/**
 * A request body's JSON: refused (400 json_too_deep) when its arrays and objects nest past JSON_DEPTH_LIMIT,
 * before it is parsed, and 400 `notJson` when it is not JSON.
 */
export function parseJsonBody(text: string, notJson: string): unknown {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > JSON_DEPTH_LIMIT) throw new HttpError(400, `the body's JSON nests deeper than ${JSON_DEPTH_LIMIT} levels`, 'json_too_deep');
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, notJson);
  }
}

/** The request's JSON object body ({} when empty). */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readBody(req);
  if (body.length === 0) return {};
  const parsed = parseJsonBody(body.toString('utf8'), 'the request body must be a JSON object');
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new HttpError(400, 'the request body must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** A whole-number query parameter, or undefined when absent. */
export function integerParam(url: URL, name: string, max = 1_000_000_000): number | undefined {
  const text = url.searchParams.get(name);
  if (text === null) return undefined;
  if (!/^[0-9]{1,10}$/.test(text) || Number(text) > max) throw new HttpError(400, `"${name}" is a whole number up to ${max}`);
  return Number(text);
}

/** A signal cursor (a signal id) query parameter, or undefined when absent. */
export function cursorParam(url: URL, name: string): string | undefined {
  const text = url.searchParams.get(name);
  if (text === null || text === '') return undefined;
  if (!/^[0-9]{1,18}$/.test(text)) throw new HttpError(400, `"${name}" is a signal id from a previous page`);
  return text;
}

/** The path's segments, decoded. */
export function pathParts(pathname: string): string[] {
  try {
    return pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new HttpError(400, 'the path is not valid percent-encoding');
  }
}

/**
 * A server-sent events response: named events with ids, and comment heartbeats so proxies and the
 * browser keep the connection open.
 */
/** Who a request is, and whether its token still stands (an open stream asks again: a revoked token ends it). */
export interface Caller {
  principal: Principal;
  /** False once the token is revoked, expired or rotated (or, for the server's own token, once a user exists). */
  stillValid(): Promise<boolean>;
}

export class SseStream {
  private heartbeat: NodeJS.Timeout;
  private recheck: NodeJS.Timeout;
  closed = false;

  /**
   * An open stream of server-sent events for `caller`, whose token is asked after every `recheckMs` (default 2 s):
   * once it no longer stands (revoked, expired, rotated) the stream says so and ends.
   */
  constructor(
    private readonly res: ServerResponse,
    heartbeatMs: number,
    onClose: () => void,
    caller: Caller,
    recheckMs = 2000,
  ) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(': connected\n\n');
    this.heartbeat = setInterval(() => this.comment('heartbeat'), heartbeatMs);
    let asking = false;
    this.recheck = setInterval(() => {
      if (asking) return;
      asking = true;
      caller
        .stillValid()
        .then((valid) => {
          if (valid || this.closed) return;
          this.send('unauthorized', { error: 'the token of this stream was revoked, expired or rotated' });
          this.close();
        })
        // a database that does not answer now leaves the stream as it is: the next look decides
        .catch(() => undefined)
        .finally(() => (asking = false));
    }, recheckMs);
    res.on('close', () => {
      this.closed = true;
      clearInterval(this.heartbeat);
      clearInterval(this.recheck);
      onClose();
    });
  }

  send(event: string, data: unknown, id?: number | string): void {
    if (this.open) this.res.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  comment(text: string): void {
    if (this.open) this.res.write(`: ${text}\n\n`);
  }

  /**
   * Ends the stream; nothing is written after (a read that finishes between the end and the response's 'close'
   * event wrote after the end, an uncaught error that ended the server).
   */
  close(): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    clearInterval(this.recheck);
    if (!this.res.writableEnded) this.res.end();
  }

  private get open(): boolean {
    return !this.closed && !this.res.writableEnded && !this.res.destroyed;
  }
}
