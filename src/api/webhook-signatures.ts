/**
 * The signatures a webhook of an event may carry (the project config's events.NAME.signature), each checked over
 * the raw body before anything is read or written:
 * - braid (the default): `braid-signature: t=UNIX_SECONDS,v1=HEX`, the HMAC-SHA256 of `t.body`, as braid signs the
 *   requests of its HTTP kinds;
 * - stripe: the same construction in `Stripe-Signature`;
 * - github: `X-Hub-Signature-256: sha256=HEX`, the HMAC-SHA256 of the body;
 * - hmac-sha256: an HMAC of the body in a header the config names (its algorithm, encoding and prefix).
 * A timestamped scheme refuses a `t` further than `tolerance` from now. A valid signature is remembered for the
 * tolerance window (its digest): the same signed request again is a replay.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseDuration } from '../compiler/duration.js';
import { DEFAULT_TOLERANCE_S, verifySignature } from '../runtime/index.js';

export type SignatureScheme = 'braid' | 'stripe' | 'github' | 'hmac-sha256';

/** How a webhook of one event is signed, as the config writes it. */
export interface EventSignature {
  /** Default: hmac-sha256 when `header` is given (the first form braid took), else braid. */
  scheme?: SignatureScheme;
  secret_env: string;
  /** The header of an hmac-sha256 signature (the others have their own). */
  header?: string;
  algorithm?: 'sha1' | 'sha256' | 'sha512';
  encoding?: 'hex' | 'base64';
  prefix?: string;
  /** How far a timestamp may be from now, and how long a signature is remembered (default 5m). */
  tolerance?: string;
}

export type WebhookCheck = { ok: true; digest: string; windowMs: number } | { ok: false; reason: string };

const HEADERS: Record<Exclude<SignatureScheme, 'hmac-sha256'>, string> = {
  braid: 'braid-signature',
  stripe: 'stripe-signature',
  github: 'x-hub-signature-256',
};

export const schemeOf = (s: EventSignature): SignatureScheme => s.scheme ?? (s.header !== undefined ? 'hmac-sha256' : 'braid');

/** The header a signature arrives in. */
export function signatureHeader(s: EventSignature): string {
  const scheme = schemeOf(s);
  return scheme === 'hmac-sha256' ? (s.header ?? 'x-signature') : HEADERS[scheme];
}

function toleranceMs(s: EventSignature): number {
  return s.tolerance === undefined ? DEFAULT_TOLERANCE_S * 1000 : (parseDuration(s.tolerance) ?? DEFAULT_TOLERANCE_S * 1000);
}

/** Whether a request signs its raw body for `event`, by the event's scheme; with the digest to remember when it does. */
export function checkWebhook(event: string, s: EventSignature, raw: Buffer, headers: IncomingHttpHeaders, now: Date = new Date()): WebhookCheck {
  const secret = process.env[s.secret_env];
  if (!secret) return { ok: false, reason: `no secret in ${s.secret_env}` };
  const name = signatureHeader(s);
  const given = headers[name.toLowerCase()];
  if (typeof given !== 'string' || given === '') return { ok: false, reason: `no ${name} header` };
  const windowMs = toleranceMs(s);
  const scheme = schemeOf(s);
  let ok: boolean;
  if (scheme === 'braid' || scheme === 'stripe') {
    const r = verifySignature({ secret, header: given, body: raw, now, toleranceS: windowMs / 1000 });
    if (!r.ok) return r;
    ok = true;
  } else if (scheme === 'github') ok = hmacMatches(secret, 'sha256', 'hex', 'sha256=', raw, given);
  else ok = hmacMatches(secret, s.algorithm ?? 'sha256', s.encoding ?? 'hex', s.prefix ?? '', raw, given);
  if (!ok) return { ok: false, reason: `the ${name} signature does not match the body` };
  // what identifies the signed request: the event and its signature (which covers the body, and t where there is one)
  return { ok: true, digest: createHash('sha256').update(`${event}\n${given}`).digest('hex'), windowMs };
}

function hmacMatches(secret: string, algorithm: string, encoding: 'hex' | 'base64', prefix: string, raw: Buffer, header: string): boolean {
  if (!header.startsWith(prefix)) return false;
  const given = Buffer.from(header.slice(prefix.length).trim(), encoding);
  const wanted = createHmac(algorithm, secret).update(raw).digest();
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
