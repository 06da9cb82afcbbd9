/**
 * A kind served over HTTP (`kinds: { send_email: { http: { url, timeout, secret_env, headers } } }`): a handler
 * like any other — the worker claims, times out, retries and checks the output as for a TypeScript one — whose
 * work is one signed POST. The endpoint's answer decides the attempt: a 2xx JSON body is the output; a 4xx other
 * than 408 and 429 ends the task (no retry mends a bad request); 408, 429, 5xx and a network failure are retried
 * as the task's policy says, a `Retry-After` snoozing it instead (no attempt used); a body over `max_output` is
 * `output_too_large`; past the kind's timeout the request is aborted and the attempt retried.
 */
import type { Handler, Handlers, TaskContext } from './handlers.js';
import { SIGNATURE_HEADER, signBody } from './http-signature.js';
import { MAX_SNOOZE_MS, NonRetryableError, TaskFailed } from './task-errors.js';

/** One HTTP kind, as the config gives it (its secret and header values read from the environment already). */
export interface HttpKind {
  url: string;
  /** How long one request may take, in ms (default 30 s; the task's own timeout aborts it sooner). */
  timeoutMs?: number;
  /** The HMAC key of the `braid-signature` header; unsigned without one. */
  secret?: string;
  headers?: Record<string, string>;
  /** The largest body read, in bytes (default the most any task may return, 64 MiB): a larger one is output_too_large. */
  maxOutputBytes?: number;
}

export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
const MOST_OUTPUT_BYTES = 64 * 1024 * 1024;

/** What the endpoint is sent: enough to do the work and to recognise a retry of the same attempt. */
export interface HttpTaskRequest {
  workflow: { id: string };
  task: { name: string; kind: string };
  attempt: number;
  max_attempts: number;
  args: unknown;
  /** The outputs of the task's direct deps, by task name. */
  deps: Record<string, unknown>;
  /** When the attempt times out (ISO 8601); null without a timeout. */
  deadline: string | null;
}

/** A handlers module's handlers and the HTTP kinds together: a kind both serve is refused (one would silently win). */
export function withHttpKinds(handlers: Handlers, http: Handlers): Handlers {
  const both = Object.keys(http).find((k) => Object.hasOwn(handlers, k));
  if (both !== undefined) throw new Error(`kind "${both}" is served over HTTP (braid.config.yaml kinds.${both}.http) and by the handlers module: keep one`);
  return { ...handlers, ...http };
}

/** The handler that serves a kind by POSTing to its endpoint. */
export function httpHandler(kind: string, spec: HttpKind): Handler {
  return (args: unknown, ctx: TaskContext) => post(kind, spec, args, ctx);
}

async function post(kind: string, spec: HttpKind, args: unknown, ctx: TaskContext): Promise<unknown> {
  const request: HttpTaskRequest = {
    workflow: { id: ctx.workflowId },
    task: { name: ctx.taskName, kind },
    attempt: ctx.attempt,
    max_attempts: ctx.maxAttempts,
    args: args ?? null,
    deps: ctx.deps,
    deadline: ctx.deadline?.toISOString() ?? null,
  };
  const body = JSON.stringify(request);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const headers: Record<string, string> = { ...spec.headers, 'content-type': 'application/json', 'user-agent': 'braid' };
  if (spec.secret !== undefined) headers[SIGNATURE_HEADER] = signBody(spec.secret, body);
  let res: Response;
  try {
    res = await fetch(spec.url, { method: 'POST', body, headers, signal: AbortSignal.any([ctx.signal, timeout]), redirect: 'error' });
  } catch (error) {
    if (timeout.aborted && !ctx.signal.aborted) throw new TaskFailed(`POST ${spec.url} did not answer within ${timeoutMs} ms`, 'http_timeout');
    throw new TaskFailed(`POST ${spec.url} failed: ${reason(error)}`, 'http_unreachable');
  }
  const text = await readCapped(res, spec.maxOutputBytes ?? MOST_OUTPUT_BYTES, spec.url, timeout);
  if (res.status >= 200 && res.status < 300) return parseOutput(text, spec.url);
  const said = `POST ${spec.url} answered ${res.status}${text ? `: ${text.slice(0, 300)}` : ''}`;
  const retryAfter = retryAfterMs(res.headers.get('retry-after'));
  if ((res.status >= 500 || res.status === 408 || res.status === 429) && retryAfter !== undefined) {
    ctx.log.warn(`${said}; asked to retry after ${retryAfter} ms`);
    ctx.snooze(retryAfter);
  }
  if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw new NonRetryableError(said, { code: `http_${res.status}` });
  throw new TaskFailed(said, `http_${res.status}`);
}

/** The body as text, read up to `cap` bytes: a longer one is the attempt's output_too_large, never held whole. */
async function readCapped(res: Response, cap: number, url: string, timeout: AbortSignal): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > cap) {
    await res.body?.cancel();
    throw tooLarge(url, cap);
  }
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > cap) throw tooLarge(url, cap);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof TaskFailed) throw error;
    if (timeout.aborted) throw new TaskFailed(`POST ${url} did not finish its answer in time`, 'http_timeout');
    throw new TaskFailed(`POST ${url}: reading the answer failed: ${reason(error)}`, 'http_unreachable');
  }
  return Buffer.concat(chunks).toString('utf8');
}

const tooLarge = (url: string, cap: number) => new TaskFailed(`POST ${url} answered with a body over ${cap} bytes (max_output)`, 'output_too_large');

/** A 2xx body: JSON, or nothing (no output). */
function parseOutput(text: string, url: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new NonRetryableError(`POST ${url} answered 2xx with a body that is not JSON: ${text.slice(0, 200)}`, { code: 'http_output_not_json' });
  }
}

/** `Retry-After` as milliseconds from now: seconds, or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  const ms = /^[0-9]{1,10}$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_SNOOZE_MS) : undefined;
}

const reason = (error: unknown): string => {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
};
