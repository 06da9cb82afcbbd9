/**
 * The deployment's signing keys (config `secret`, env BRAID_SECRET): `ID:SECRET` pairs separated by commas, the
 * first the one that signs, the rest still accepted (a rotation adds a new first key and drops an old one once
 * its links have expired). A bare secret is the key with id `k1`. Secrets never appear in a message.
 */

export interface SigningKey {
  id: string;
  secret: Buffer;
}

/** The keys: the first signs, every one verifies. */
export interface KeyRing {
  current: SigningKey;
  byId: ReadonlyMap<string, SigningKey>;
}

export class SecretConfigError extends Error {
  readonly code = 'bad_request' as const;
  constructor(message: string) {
    super(message);
    this.name = 'SecretConfigError';
  }
}

const MIN_SECRET = 32;
const KEY_ID = /^[A-Za-z0-9_-]{1,16}$/;

/** Parses the keys; undefined when none is configured. `from` names where the text came from, for messages. */
export function parseKeyRing(text: string | undefined, from = 'BRAID_SECRET'): KeyRing | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const entries = text.split(',').map((part) => part.trim());
  const keys: SigningKey[] = [];
  for (const [i, entry] of entries.entries()) {
    const colon = entry.indexOf(':');
    const bare = entries.length === 1 && (colon < 0 || !KEY_ID.test(entry.slice(0, colon)));
    const id = bare ? 'k1' : entry.slice(0, colon);
    const secret = bare ? entry : entry.slice(colon + 1);
    if (!KEY_ID.test(id)) throw new SecretConfigError(`${from}: entry ${i + 1} is not ID:SECRET (an id of 1 to 16 letters, digits, _ or -)`);
    if (Buffer.byteLength(secret) < MIN_SECRET)
      throw new SecretConfigError(`${from}: the secret of key "${id}" is shorter than ${MIN_SECRET} characters (make one with: openssl rand -base64 32)`);
    if (keys.some((k) => k.id === id)) throw new SecretConfigError(`${from}: key id "${id}" is listed twice`);
    keys.push({ id, secret: Buffer.from(secret) });
  }
  return { current: keys[0], byId: new Map(keys.map((k) => [k.id, k])) };
}
