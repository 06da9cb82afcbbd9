/**
 * A user's token: `braid_ID_SECRET`. The id finds the user's row; the secret is kept only as a salted scrypt
 * hash, so the database never holds a token that would work. Verifying costs scrypt once per token per process
 * (then a digest of the token is remembered); a revoked or expired token is refused by its row every time.
 */
import { createHash, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

const PARAMS = { N: 16384, r: 8, p: 1 } as const;
const TOKEN = /^braid_([0-9a-f]{24})_([A-Za-z0-9_-]{43})$/;

export interface NewToken {
  token: string;
  tokenId: string;
  tokenHash: string;
}

export function makeToken(): NewToken {
  const tokenId = randomBytes(12).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const salt = randomBytes(16);
  const hash = scryptSync(secret, salt, 32, PARAMS);
  return {
    token: `braid_${tokenId}_${secret}`,
    tokenId,
    tokenHash: `scrypt:${PARAMS.N}:${PARAMS.r}:${PARAMS.p}:${salt.toString('base64')}:${hash.toString('base64')}`,
  };
}

/** The id and secret of what looks like a user token; undefined for anything else. */
export function parseToken(token: string): { tokenId: string; secret: string } | undefined {
  const m = TOKEN.exec(token);
  return m ? { tokenId: m[1], secret: m[2] } : undefined;
}

// digests of tokens verified against a stored hash: scrypt once per token and hash, not per request
const verified = new Map<string, string>();

/** Whether the secret matches the stored hash. */
export function verifySecret(secret: string, stored: string): boolean {
  const digest = createHash('sha256').update(secret).digest('base64');
  if (verified.get(digest) === stored) return true;
  const [kind, n, r, p, salt, hash] = stored.split(':');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const want = Buffer.from(hash, 'base64');
  const got = scryptSync(secret, Buffer.from(salt, 'base64'), want.length, { N: Number(n), r: Number(r), p: Number(p) });
  if (!timingSafeEqual(got, want)) return false;
  if (verified.size >= 1000) verified.delete(verified.keys().next().value as string);
  verified.set(digest, stored);
  return true;
}
