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

/** The ids of the keys the envelopes in a value were sealed with, sorted; null when it holds none. */
export function sealedKeyIds(value: unknown): string[] | null {
  const ids = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      if (v.startsWith(SEALED_PREFIX)) ids.add(sealedKeyId(v));
    } else if (Array.isArray(v)) for (const x of v) walk(x);
    else if (typeof v === 'object' && v !== null) for (const x of Object.values(v)) walk(x);
  };
  walk(value);
  return ids.size === 0 ? null : [...ids].sort();
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

/** The sensitive values opened into each parsed object (its args, say), as text: what its attempt's log redacts. */
const opened = new WeakMap<object, Set<string>>();

/** The data keys each parsed object holds values of that this process was not given (they stay sealed in it). */
const unopened = new WeakMap<object, Set<string>>();

/** The ids of the data keys a value read from the database needs and this process lacks (its envelopes stay sealed). */
export function missingKeysIn(value: unknown): ReadonlySet<string> | undefined {
  return typeof value === 'object' && value !== null ? unopened.get(value) : undefined;
}

function markMissing(holder: unknown, ids: ReadonlySet<string>): void {
  if (typeof holder !== 'object' || holder === null) return;
  const known = unopened.get(holder);
  if (known) for (const x of ids) known.add(x);
  else unopened.set(holder, new Set(ids));
}

/** The sensitive values a value read from the database (or rendered from them) holds in clear. */
export function secretsIn(value: unknown): ReadonlySet<string> | undefined {
  return typeof value === 'object' && value !== null ? opened.get(value) : undefined;
}

/** Says that `value` holds these sensitive values in clear (args rendered from sealed ones). */
export function markSecrets(value: unknown, secrets: ReadonlySet<string>): void {
  if (secrets.size === 0 || typeof value !== 'object' || value === null) return;
  const known = opened.get(value);
  if (known) for (const x of secrets) known.add(x);
  else opened.set(value, new Set(secrets));
}

/** Text of 4 or more characters: a value computed from a sensitive one is recognised by it. */
export function leafTexts(value: unknown, into: Set<string>): void {
  if (typeof value === 'string' && value.length >= 4) into.add(value);
  else if (typeof value === 'number' && String(value).length >= 4) into.add(String(value));
  else if (Array.isArray(value)) for (const v of value) leafTexts(v, into);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) leafTexts(v, into);
}

/**
 * JSON text as braid's reads parse it: envelopes opened (the common text without one is parsed as is). Every
 * object holding an opened value, however deep, is marked with it (a claim's rows are one array of tasks: each
 * task's args know their own).
 */
export function parseOpened(text: string): unknown {
  return openJson(text, false);
}

/**
 * As parseOpened, but a value sealed with a key this process lacks stays sealed, and every object holding it says
 * which key it needs (missingKeysIn): what a worker's claim reads, so a task it cannot open is given back, not run.
 */
export function parseOpenedKeeping(text: string): unknown {
  return openJson(text, true);
}

function openJson(text: string, keeping: boolean): unknown {
  if (!text.includes(SEALED_PREFIX)) return JSON.parse(text);
  // children are revived before their holder: what a child holds is added to the holder (`this`) as it comes
  return JSON.parse(text, function (this: unknown, _k: string, v: unknown) {
    if (isSealed(v)) {
      const id = sealedKeyId(v as string);
      // a value of a key this process lacks stays sealed, and its holders say which key they need (a worker
      // without it gives the task back rather than run it on a sealed value)
      if (keeping && !known.has(id)) {
        markMissing(this, new Set([id]));
        return v;
      }
      const clear = unseal(v as string);
      const found = new Set<string>();
      leafTexts(clear, found);
      markSecrets(clear, found);
      markSecrets(this, found);
      return clear;
    }
    const below = secretsIn(v);
    if (below) markSecrets(this, below);
    const missing = missingKeysIn(v);
    if (missing) markMissing(this, missing);
    return v;
  }) as unknown;
}

/** JSON text as shown to people: every envelope reads `[redacted]`. */
export function parseRedacted(text: string): unknown {
  if (!text.includes(SEALED_PREFIX)) return JSON.parse(text);
  return JSON.parse(text, (_k, v: unknown) => (isSealed(v) ? REDACTED : v));
}
