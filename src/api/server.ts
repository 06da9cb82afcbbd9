import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompileError } from '../compiler/instantiate.js';
import { UnknownWorkflowError, WorkflowNotFoundError, type Runtime } from '../runtime/runtime.js';
import { isSubjectError, subjectStatus } from '../runtime/errors.js';

export interface ApiServer {
  url: string;
  token: string;
  close(): Promise<void>;
}

/**
 * The local HTTP API of a process that holds the embedded database: other `braid` commands of the project
 * reach the runtime through it. JSON, snake_case, bound to 127.0.0.1, every request needs the token.
 */
export async function startApiServer(rt: Runtime, options: { port?: number; host?: string; token?: string; definitionsDir?: string } = {}): Promise<ApiServer> {
  const token = options.token ?? randomBytes(24).toString('hex');
  const server: Server = createServer((req, res) => {
    handle(rt, req, res, token, options.definitionsDir).catch((error: Error) => send(res, 500, { error: error.message }));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function authorized(req: IncomingMessage, token: string): boolean {
  const given = Buffer.from((req.headers.authorization ?? '').replace(/^Bearer /, ''));
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 10 * 1024 * 1024) throw new HttpError(413, 'request body over 10 MB');
    chunks.push(chunk as Buffer);
  }
  if (chunks.length === 0) return {};
  try {
    const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  } catch {
    throw new HttpError(400, 'the request body must be a JSON object');
  }
}

function integer(text: string, name: string): number {
  if (!/^[0-9]{1,9}$/.test(text)) throw new HttpError(400, `"${name}" is a whole number`);
  return Number(text);
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(payload));
}

async function handle(rt: Runtime, req: IncomingMessage, res: ServerResponse, token: string, definitionsDir?: string): Promise<void> {
  if (!authorized(req, token)) return send(res, 401, { error: 'missing or wrong token' });
  if (req.method === 'POST' && req.headers['content-type']?.split(';')[0] !== 'application/json') return send(res, 415, { error: 'JSON only' });
  const url = new URL(req.url ?? '/', 'http://localhost');
  const parts = url.pathname.split('/').filter(Boolean);
  try {
    if (req.method === 'POST' && url.pathname === '/api/workflows') {
      const b = await body(req);
      if (typeof b.name !== 'string') throw new HttpError(400, '"name" is required');
      if (typeof b.definitions_dir === 'string' || definitionsDir) await rt.registerDefinitions(typeof b.definitions_dir === 'string' ? b.definitions_dir : definitionsDir!);
      const id = await rt.start(b.name, b.inputs ?? {});
      return send(res, 201, { id });
    }
    if (parts[0] === 'api' && parts[1] === 'workflows' && parts[2]) {
      const wf = rt.workflow(decodeURIComponent(parts[2]));
      if (req.method === 'GET' && parts.length === 3) return send(res, 200, await wf.status());
      if (req.method === 'POST' && parts[3] === 'cancel') return send(res, 200, await wf.cancel());
      if (req.method === 'POST' && parts[3] === 'retry' && parts.length === 4) {
        const b = await body(req);
        const mode = b.mode ?? 'all';
        if (mode !== 'all' && mode !== 'failed_only' && mode !== 'failed_and_downstream') throw new HttpError(400, '"mode" is all, failed_only or failed_and_downstream');
        if (b.reset_history !== undefined && typeof b.reset_history !== 'boolean') throw new HttpError(400, '"reset_history" is a boolean');
        return send(res, 200, await wf.retry({ mode, resetHistory: b.reset_history === true }));
      }
      if (parts[3] === 'signals' && parts.length === 4) {
        if (req.method === 'POST') {
          const b = await body(req);
          if (typeof b.key !== 'string') throw new HttpError(400, '"key" is required');
          if (b.attempt !== undefined && typeof b.attempt !== 'number') throw new HttpError(400, '"attempt" is a number');
          if (b.idempotency_key !== undefined && typeof b.idempotency_key !== 'string') throw new HttpError(400, '"idempotency_key" is a string');
          const result = await wf.signals.emit(b.key, b.payload ?? null, { idempotencyKey: b.idempotency_key as string | undefined, source: b.source, attempt: b.attempt as number | undefined });
          return send(res, result.replayed ? 200 : 201, result);
        }
        if (req.method === 'GET') {
          const attempt = url.searchParams.get('attempt');
          const limit = url.searchParams.get('limit');
          return send(
            res,
            200,
            await wf.signals.list({
              attempt: attempt === null ? undefined : integer(attempt, 'attempt'),
              key: url.searchParams.get('key') ?? undefined,
              cursorId: url.searchParams.get('cursor_id') ?? undefined,
              limit: limit === null ? undefined : integer(limit, 'limit'),
            }),
          );
        }
      }
      if (req.method === 'GET' && parts[3] === 'tasks' && parts[4] && parts[5] === 'diagnostics' && parts.length === 6) {
        const limit = url.searchParams.get('signal_scan_limit');
        return send(res, 200, await wf.waitDiagnostics(decodeURIComponent(parts[4]), { signalScanLimit: limit === null ? undefined : integer(limit, 'signal_scan_limit') }));
      }
      if (req.method === 'GET' && parts[3] === 'wait') {
        const timeoutMs = Number(url.searchParams.get('timeout_ms') ?? 30_000);
        const w = await wf.waitUntilFinal({ timeoutMs: Math.min(Math.max(timeoutMs, 0), 600_000), pollMs: 200 }).catch(() => undefined);
        return send(res, 200, { workflow: w ?? (await wf.load()) });
      }
    }
    return send(res, 404, { error: `no route ${req.method} ${url.pathname}` });
  } catch (error) {
    if (error instanceof HttpError) return send(res, error.status, { error: error.message });
    if (error instanceof WorkflowNotFoundError || error instanceof UnknownWorkflowError) return send(res, 404, { error: error.message });
    if (error instanceof CompileError) return send(res, 422, { error: 'inputs do not fit', diagnostics: error.diagnostics });
    if (isSubjectError(error)) return send(res, subjectStatus(error), { error: error.message, name: error.name });
    throw error;
  }
}
