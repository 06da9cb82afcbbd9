/**
 * A callback link's token: which workflow, task, term and link it completes, signed with the deployment's key
 * (HMAC-SHA256, 256 bits, so no one without the key can make one). Self-contained: minting reads nothing and
 * writes nothing, the same link comes back however often it is asked for, and a forged or damaged token is
 * refused before any database read, with nothing to tell it from an unknown one.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { KeyRing, SigningKey } from './secrets.js';

export interface CallbackRef {
  workflowId: string;
  task: string;
  term: string;
  /** The link's place among the term's recipients (0 without recipients). */
  link: number;
}

const VERSION = 'v1';
/** Longer tokens are not braid's: refused unread. */
export const MAX_TOKEN_LENGTH = 1024;

function mac(key: SigningKey, body: string): Buffer {
  return createHmac('sha256', key.secret).update(`braid-callback.${VERSION}.${key.id}.${body}`).digest();
}

export function mintToken(keys: KeyRing, ref: CallbackRef): string {
  const body = Buffer.from(JSON.stringify([ref.workflowId, ref.task, ref.term, ref.link])).toString('base64url');
  return `${VERSION}.${keys.current.id}.${body}.${mac(keys.current, body).toString('base64url')}`;
}

/** The link a token names, or undefined for anything braid did not sign with a key it still has. */
export function readToken(keys: KeyRing | undefined, token: string): CallbackRef | undefined {
  if (!keys || token.length > MAX_TOKEN_LENGTH) return undefined;
  const parts = token.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) return undefined;
  const [, id, body, signature] = parts;
  const key = keys.byId.get(id);
  if (!key) return undefined;
  const given = Buffer.from(signature, 'base64url');
  // one spelling per link: base64url's spare low bits (and stray characters) would let a changed token pass
  if (given.toString('base64url') !== signature) return undefined;
  const wanted = mac(key, body);
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return undefined;
  const value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as unknown;
  if (!Array.isArray(value) || value.length !== 4) return undefined;
  const [workflowId, task, term, link] = value as unknown[];
  if (typeof workflowId !== 'string' || typeof task !== 'string' || typeof term !== 'string' || !Number.isInteger(link)) return undefined;
  return { workflowId, task, term, link: link as number };
}
