/**
 * /callbacks/TOKEN: where a callback term's links are answered. Outside the API's token (the link is its own
 * capability) but behind the server's Host check, a small body bound and a per-link rate. GET shows the link's
 * page (a browser), POST takes its body: JSON from a system (answered in JSON), or the page's form (answered
 * with a page). Pages are static HTML under a policy that runs no script and leaks no token in a Referer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpStatus, isCallerError } from '../error-codes.js';
import type { CallbackReceipt } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import type { CallbackView } from '../runtime/wire/index.js';
import { bodyFromForm, formPage, messagePage } from './callback-page.js';
import { HttpError, parseJsonBody, pathParts, readBody, send } from './http.js';
import type { RateLimit } from './rate-limit.js';

export const CALLBACK_PREFIX = '/callbacks/';
const MAX_CALLBACK_BODY = 64 * 1024;

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};

function sendPage(res: ServerResponse, status: number, html: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...PAGE_HEADERS, ...extra });
  res.end(html);
}

const titleOf = (v: CallbackView): string => v.label ?? `${v.task}: ${v.term}`;

/** Serves one request under /callbacks/. */
export async function serveCallback(rt: Runtime, req: IncomingMessage, res: ServerResponse, url: URL, limit: RateLimit): Promise<void> {
  const parts = pathParts(url.pathname);
  const token = parts.length === 2 ? parts[1] : '';
  const method = req.method ?? 'GET';
  const asPage = method !== 'POST' || isForm(req);
  try {
    if (parts.length !== 2) throw new HttpError(404, 'no such callback link', 'callback_not_found');
    const wait = limit.take(token);
    if (wait !== undefined) throw new HttpError(429, 'too many requests for this link; try again later', 'rate_limited', { 'retry-after': String(wait) });
    if (method === 'GET' || method === 'HEAD') return await showLink(rt, res, token);
    if (method !== 'POST') throw new HttpError(405, 'a link is read with GET and answered with POST');
    const raw = await readBody(req, MAX_CALLBACK_BODY);
    if (asPage) {
      const view = await rt.callbacks.view(token);
      const form = bodyFromForm(view.schema, new URLSearchParams(raw.toString('utf8')));
      const receipt = await rt.callbacks.receive(token, form, { address: req.socket.remoteAddress });
      return sendPage(res, 200, messagePage(titleOf(view), receipt.replayed ? 'This was already recorded.' : 'Thank you: your answer is recorded.'));
    }
    const receipt = await rt.callbacks.receive(token, parseJson(req, raw), { address: req.socket.remoteAddress });
    send(res, 200, receiptJson(receipt));
  } catch (error) {
    if (!isCallerError(error)) throw error;
    const status = httpStatus(error.code);
    const headers = error instanceof HttpError ? error.headers : {};
    if (!asPage) return send(res, status, { error: error.message, code: error.code, ...problemsOf(error) }, headers);
    sendPage(res, status, messagePage(status === 404 ? 'Link not valid' : 'Link not answered', pageMessage(error, status)), headers);
  }
}

async function showLink(rt: Runtime, res: ServerResponse, token: string): Promise<void> {
  const view = await rt.callbacks.view(token);
  if (view.gone !== null) return sendPage(res, 410, messagePage(titleOf(view), `This link no longer answers: ${view.gone}.`));
  if (view.used !== null) return sendPage(res, 200, messagePage(titleOf(view), 'This link was already used: its answer is recorded.'));
  sendPage(res, 200, formPage({ title: titleOf(view), recipient: view.recipient, schema: view.schema, description: view.description }));
}

function isForm(req: IncomingMessage): boolean {
  const type = req.headers['content-type']?.split(';')[0].trim().toLowerCase();
  return type === 'application/x-www-form-urlencoded' || type === 'multipart/form-data';
}

function parseJson(req: IncomingMessage, raw: Buffer): unknown {
  const type = req.headers['content-type']?.split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new HttpError(415, 'send the body as JSON (content-type: application/json)');
  if (raw.length === 0) return null;
  return parseJsonBody(raw.toString('utf8'), 'the body is not JSON');
}

function receiptJson(r: CallbackReceipt): Record<string, unknown> {
  return {
    status: r.replayed ? 'replayed' : 'accepted',
    workflow_id: r.workflowId,
    task: r.task,
    term: r.term,
    recipient: r.recipient,
    signal_id: r.signal.id,
    resolved: r.resolved,
  };
}

function problemsOf(error: unknown): Record<string, unknown> {
  const problems = (error as { problems?: unknown }).problems;
  return Array.isArray(problems) ? { problems } : {};
}

function pageMessage(error: Error, status: number): string {
  if (status === 404) return 'This link is not valid. Check that it was copied whole.';
  if (status === 422) return `The answer was not recorded: ${error.message}.`;
  return `${error.message}.`;
}
