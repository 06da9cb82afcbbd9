import { pathTo, ROUTES } from '../../api/route-table.js';
/** The page's side of the API: the session, JSON requests, and live snapshots (SSE, or polling when it fails). */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let signIn: (() => Promise<void>) | undefined;

/** How the page asks for the token when it has no session (set by main). */
export function onSignInNeeded(ask: () => Promise<void>): void {
  signIn = ask;
}

/** Trades a token for the session cookie; the token itself is never stored by the page. */
export async function startSession(token: string): Promise<boolean> {
  const res = await fetch(pathTo('session', {}), {
    method: ROUTES.session.method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  return res.status === 204;
}

/** A link opened as /#token=...: sign in with it, then drop it from the address bar and history. */
export async function sessionFromHash(): Promise<void> {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, '', location.pathname + location.search);
  await startSession(decodeURIComponent(m[1]));
}

export async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ body: T; eventId: number }> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body !== undefined || method === 'POST' ? { 'content-type': 'application/json' } : {},
      body: method === 'POST' ? JSON.stringify(body ?? {}) : undefined,
    });
    if (res.status === 401 && attempt === 0 && signIn) {
      await signIn();
      continue;
    }
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as T & { error?: string }) : (null as unknown as T & { error?: string });
    if (!res.ok) throw new ApiError(res.status, parsed?.error ?? `${res.status} ${res.statusText}`);
    return { body: parsed, eventId: Number(res.headers.get('x-braid-event-id') ?? 0) };
  }
}

export const get = async <T>(path: string) => (await request<T>('GET', path)).body;
export const post = async <T>(path: string, body?: unknown) => (await request<T>('POST', path, body)).body;

export interface Live {
  close(): void;
}

/**
 * Follows a resource live: snapshots from its event stream, each applied only if newer than the last one
 * applied (event ids increase), plus the dev state. When the stream keeps failing it falls back to polling.
 */
export function live<T>(streamPath: string, pollPath: string, onSnapshot: (value: T) => void, onDev?: (dev: DevState) => void): Live {
  const onStatus = (on: boolean) => document.getElementById('live')?.classList.toggle('on', on);
  let last = 0;
  let closed = false;
  let failures = 0;
  let source: EventSource | undefined;
  let poller: number | undefined;
  const apply = (value: T, id: number) => {
    if (closed || (id > 0 && id <= last)) return;
    if (id > 0) last = id;
    onSnapshot(value);
  };
  const poll = async () => {
    try {
      const { body, eventId } = await request<T>('GET', pollPath);
      apply(body, eventId);
      onStatus(false);
    } catch {
      /* tried again on the next tick */
    }
  };
  const open = () => {
    source = new EventSource(streamPath);
    source.addEventListener('open', () => {
      failures = 0;
      onStatus(true);
    });
    source.addEventListener('snapshot', (e) => apply(JSON.parse((e as MessageEvent<string>).data) as T, Number((e as MessageEvent).lastEventId)));
    source.addEventListener('dev', (e) => {
      const dev = JSON.parse((e as MessageEvent<string>).data) as DevState;
      window.dispatchEvent(new CustomEvent('braid-dev', { detail: dev }));
      onDev?.(dev);
    });
    source.addEventListener('gone', () => source?.close());
    source.addEventListener('error', () => {
      onStatus(false);
      if (++failures >= 3 && !poller) {
        source?.close();
        poller = window.setInterval(poll, 2000);
        void poll();
      }
    });
  };
  open();
  return {
    close() {
      closed = true;
      source?.close();
      if (poller) clearInterval(poller);
    },
  };
}

export interface Diagnostic {
  rule: string;
  severity: 'error' | 'warning';
  message: string;
  file: string;
  line: number;
  column: number;
  hint?: string;
}

export interface DevState {
  definitions: {
    ok: boolean;
    errors: number;
    warnings: number;
    failing: { file: string; name: string | null }[];
    diagnostics: Diagnostic[];
    error: string | null;
    at: string;
  } | null;
  handlers: { ok: boolean; kinds: string[]; error: string | null; at: string } | null;
}
