/**
 * The signature braid puts on each request to an HTTP handler, so the endpoint can tell braid's requests from
 * anyone's and refuse a replay: `braid-signature: t=UNIX_SECONDS,v1=HEX`, where HEX is the HMAC-SHA256, keyed by
 * the kind's secret, of `t`, a dot and the raw body. An endpoint recomputes it over the body as it arrived,
 * compares in constant time, and refuses a `t` further than its tolerance from its own clock.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'braid-signature';

/** The default tolerance: a request signed more than five minutes from the endpoint's clock is refused. */
export const DEFAULT_TOLERANCE_S = 300;

const digest = (secret: string, t: number, body: string | Uint8Array): string => createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');

/** The header's value for a body sent at `now`. */
export function signBody(secret: string, body: string, now: Date = new Date()): string {
  const t = Math.floor(now.getTime() / 1000);
  return `t=${t},v1=${digest(secret, t, body)}`;
}

export type SignatureCheck = { ok: true; t: number } | { ok: false; reason: string };

/**
 * Whether a request's `braid-signature` header signs its raw body under `secret`, within `toleranceS` seconds
 * of `now`. Pass the body exactly as it arrived (bytes or text), before any JSON parsing.
 */
export function verifySignature(o: {
  secret: string;
  header: string | null | undefined;
  body: string | Uint8Array;
  now?: Date;
  toleranceS?: number;
}): SignatureCheck {
  if (!o.header) return { ok: false, reason: `no ${SIGNATURE_HEADER} header` };
  const parts = new Map<string, string[]>();
  for (const item of o.header.split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) continue;
    const k = item.slice(0, at).trim();
    parts.set(k, [...(parts.get(k) ?? []), item.slice(at + 1).trim()]);
  }
  const tText = parts.get('t')?.[0];
  if (tText === undefined || !/^[0-9]{1,12}$/.test(tText)) return { ok: false, reason: 'no timestamp (t=)' };
  const t = Number(tText);
  const now = Math.floor((o.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - t) > (o.toleranceS ?? DEFAULT_TOLERANCE_S))
    return { ok: false, reason: `the timestamp is ${now - t} s from now: a replay, or a clock off` };
  const expected = Buffer.from(digest(o.secret, t, o.body), 'hex');
  // any v1 may match: a sender rotating its secret signs with both
  for (const v of parts.get('v1') ?? []) {
    if (!/^[0-9a-f]{64}$/.test(v)) continue;
    if (timingSafeEqual(Buffer.from(v, 'hex'), expected)) return { ok: true, t };
  }
  return { ok: false, reason: 'no v1 signature matches the body' };
}
