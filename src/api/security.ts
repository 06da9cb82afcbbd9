import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
import { HttpError } from './http.js';

const SESSION_COOKIE = 'braid_session';

/**
 * Who may talk to the server, and how:
 * - the Host header must name this server (a page on another site that rebinds its DNS name to 127.0.0.1
 *   sends its own name, and is refused);
 * - every /api request carries the token, as a Bearer header (the CLI) or as the session cookie the page
 *   gets in exchange for it (HttpOnly, SameSite=Strict, so other sites' pages never send it);
 * - a request that changes something must be JSON and come from this origin (Origin / Sec-Fetch-Site),
 *   which a cross-site form or fetch cannot fake.
 */
export class Guard {
  private readonly session: string;
  private allowedHosts?: Set<string>;

  constructor(
    private readonly token: string,
    private readonly options: { host: string; allowedHosts?: readonly string[] },
  ) {
    this.session = createHmac('sha256', token).update('braid ui session').digest('hex');
  }

  /**
   * Called once the port is known. The Host names answered: those given, else the loopback names, and when
   * listening beyond loopback also this machine's own names and addresses (never any Host at all: a page that
   * rebinds its DNS name to this machine would otherwise be answered).
   */
  listening(port: number): string[] {
    const loopback = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
    if (this.options.allowedHosts && this.options.allowedHosts.length > 0) this.allowedHosts = new Set(this.options.allowedHosts.map((h) => h.toLowerCase()));
    else this.allowedHosts = new Set(isLoopback(this.options.host) ? loopback : [...loopback, ...machineNames(port)]);
    return [...this.allowedHosts];
  }

  checkHost(req: IncomingMessage): void {
    const host = (req.headers.host ?? '').toLowerCase();
    if (this.allowedHosts && !this.allowedHosts.has(host)) throw new HttpError(403, 'this server does not answer to that Host name');
  }

  /**
   * What a request carries: the server's own token (as Bearer or its session cookie), a user's token (Bearer),
   * a user's session (the token id, proved by a cookie only this server signs), or nothing it knows.
   */
  credentials(req: IncomingMessage): { kind: 'server' } | { kind: 'user'; token: string } | { kind: 'session'; tokenId: string } | undefined {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (bearer !== undefined) return same(bearer, this.token) ? { kind: 'server' } : bearer.startsWith('braid_') ? { kind: 'user', token: bearer } : undefined;
    const cookie = cookies(req.headers.cookie)[SESSION_COOKIE];
    if (cookie === undefined) return undefined;
    if (same(cookie, this.session)) return { kind: 'server' };
    const m = /^u\.([0-9a-f]{24})\.([0-9a-f]{64})$/.exec(cookie);
    return m && same(m[2], this.userSession(m[1])) ? { kind: 'session', tokenId: m[1] } : undefined;
  }

  private userSession(tokenId: string): string {
    return createHmac('sha256', this.token).update(`braid ui session of ${tokenId}`).digest('hex');
  }

  /** A change must be JSON, sent by this origin or by a client that is not a browser page. */
  checkMutation(req: IncomingMessage): void {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpError(403, 'cross-origin requests may not change anything');
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host}` && origin !== `https://${req.headers.host}`)
      throw new HttpError(403, 'cross-origin requests may not change anything');
    if (req.headers['content-type']?.split(';')[0].trim() !== 'application/json') throw new HttpError(415, 'send JSON (content-type: application/json)');
  }

  /** The Set-Cookie value that lets the page's requests (EventSource included) carry the token (a user's: its id, signed). */
  sessionCookie(tokenId?: string): string {
    const value = tokenId === undefined ? this.session : `u.${tokenId}.${this.userSession(tokenId)}`;
    return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/`;
  }
}

/** This machine's host name and the addresses of its interfaces, as Host header values with the port. */
function machineNames(port: number): string[] {
  const names = new Set([`${hostname().toLowerCase()}:${port}`]);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) names.add(a.family === 'IPv6' ? `[${a.address.toLowerCase()}]:${port}` : `${a.address}:${port}`);
  }
  return [...names];
}

function same(given: string, wanted: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(wanted);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

export function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}
