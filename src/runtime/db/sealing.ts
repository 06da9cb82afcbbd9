/**
 * Sensitive values at rest: each is replaced, where it is stored, by an envelope string
 * `braid:enc:v1:KID:BASE64URL(iv | tag | ciphertext)`, the AES-256-GCM encryption of its JSON under the data
 * key KID. braid's reads of JSON columns open envelopes as they parse (the keys are this process's), so
 * handlers and CEL see clear values; the reads that show data to people redact them instead.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export const SEALED_PREFIX = 'braid:enc:v1:';
/** What a redacted value reads as. */
export const REDACTED = '[redacted]';

export interface DataKeys {
  /** The key new values are sealed with (the first one configured). */
  current: { id: string; key: Buffer };
  byId: ReadonlyMap<string, Buffer>;
}

export class DataKeyError extends Error {
  readonly code = 'operation_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'DataKeyError';
  }
}

/** A sealed value whose key this process does not have: said, not guessed. */
export class SealedValueError extends Error {
  readonly code = 'internal' as const;
  constructor(message: string) {
    super(message);
    this.name = 'SealedValueError';
  }
}

/** `id:base64,id2:base64` (the config's `keys:`, or BRAID_KEYS): 32-byte AES keys, the first one current. */
export function parseDataKeys(text: string | undefined, origin: string): DataKeys | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const byId = new Map<string, Buffer>();
  let current: DataKeys['current'] | undefined;
  for (const part of text.split(',')) {
    const m = /^\s*([A-Za-z0-9_-]{1,32}):([A-Za-z0-9+/=_-]+)\s*$/.exec(part);
    if (!m) throw new DataKeyError(`${origin}: each key is ID:BASE64 (ID of letters, digits, _ and -), comma separated`);
    const key = Buffer.from(m[2], 'base64');
    if (key.length !== 32) throw new DataKeyError(`${origin}: key "${m[1]}" is ${key.length} bytes; an AES-256 key is 32 (openssl rand -base64 32)`);
    if (byId.has(m[1])) throw new DataKeyError(`${origin}: key "${m[1]}" is given twice`);
    byId.set(m[1], key);
    current ??= { id: m[1], key };
  }
  return { current: current!, byId };
}

/** Every data key this process was given, by id: what its reads open envelopes with. */
const known = new Map<string, Buffer>();

/** Data keys parsed and made this process's: its reads open what they sealed. */
export function useDataKeys(text: string | undefined, origin: string): DataKeys | undefined {
  const keys = parseDataKeys(text, origin);
  if (keys) for (const [id, key] of keys.byId) known.set(id, key);
  return keys;
}

export function seal(value: unknown, keys: DataKeys): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keys.current.key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return `${SEALED_PREFIX}${keys.current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
}

export function isSealed(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith(SEALED_PREFIX);
}

/** The key id an envelope names. */
export function sealedKeyId(envelope: string): string {
  return envelope.slice(SEALED_PREFIX.length, envelope.indexOf(':', SEALED_PREFIX.length));
}

export function unseal(envelope: string): unknown {
  const id = sealedKeyId(envelope);
  const key = known.get(id);
  if (!key) throw new SealedValueError(`a sensitive value is sealed with data key "${id}", which this process was not given (config keys:, or BRAID_KEYS)`);
  const raw = Buffer.from(envelope.slice(SEALED_PREFIX.length + id.length + 1), 'base64url');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as unknown;
  } catch {
    throw new SealedValueError(`a sensitive value sealed with data key "${id}" does not open with it (a different key under the same id?)`);
  }
}

/** JSON text as braid's reads parse it: envelopes opened (the common text without one is parsed as is). */
export function parseOpened(text: string): unknown {
  if (!text.includes(SEALED_PREFIX)) return JSON.parse(text);
  return JSON.parse(text, (_k, v: unknown) => (isSealed(v) ? unseal(v as string) : v));
}

/** JSON text as shown to people: every envelope reads `[redacted]`. */
export function parseRedacted(text: string): unknown {
  if (!text.includes(SEALED_PREFIX)) return JSON.parse(text);
  return JSON.parse(text, (_k, v: unknown) => (isSealed(v) ? REDACTED : v));
}
