/**
 * Postgres refuses two things a JavaScript string may hold: U+0000 (in text and in jsonb) and an unpaired
 * UTF-16 surrogate (in jsonb). Values that reach the database from outside (handler outputs, signal payloads,
 * start inputs) are checked here first, so they fail with a message naming the field instead of a raw
 * database error, and texts braid writes itself (error messages, stacks) are escaped instead.
 */

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** In JSON.stringify's output, U+0000 and lone surrogates are the only characters it writes as these escapes. */
const UNSTORABLE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/** The text with U+0000 and unpaired surrogates written as `\u0000`-style escapes: safe for text and jsonb. */
export function storableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text;
}

/** What is wrong with a string, for a message: "U+0000" or "an unpaired surrogate U+D800". */
function describeBad(text: string): string | undefined {
  const m = UNSTORABLE.exec(text);
  if (!m) return undefined;
  const code = m[0].charCodeAt(0);
  return code === 0 ? 'U+0000' : `an unpaired surrogate U+${code.toString(16).toUpperCase()}`;
}

export interface Unstorable {
  /** JSON pointer of the offending string (or of the object whose key it is), "" for the value itself. */
  pointer: string;
  /** What was found, e.g. "U+0000". */
  what: string;
}

/**
 * Where a JSON value holds a string (a value or a key) Postgres cannot store, or undefined when it can all
 * be stored. `json` is the value's JSON text when the caller has it already (the fast path checks only that).
 */
export function findUnstorable(value: unknown, json?: string): Unstorable | undefined {
  if (json !== undefined && !UNSTORABLE_ESCAPE.test(json)) return undefined;
  // walk (without recursion: the value may be deep) to name the place
  const stack: { v: unknown; path: string }[] = [{ v: value, path: '' }];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'object' && v !== null) {
      // a cycle is not JSON: the caller's own check says so
      if (seen.has(v)) continue;
      seen.add(v);
    }
    if (typeof v === 'string') {
      const what = describeBad(v);
      if (what) return { pointer: path, what };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}/${i}` });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (const k of keys) {
        const what = describeBad(k);
        if (what) return { pointer: path, what: `${what} in the key "${storableText(k)}"` };
      }
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ v: (v as Record<string, unknown>)[keys[i]], path: `${path}/${escapePointer(keys[i])}` });
    }
  }
  return undefined;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** "at /a/0/b" or "" for the value itself: for messages about a field. */
export function atPointer(u: Unstorable): string {
  return u.pointer === '' ? '' : ` at ${u.pointer}`;
}

/** A value from outside holds a string Postgres cannot store: the caller's input is at fault (HTTP 400, exit 1). */
export class UnstorableValueError extends Error {
  readonly code = 'value_unstorable' as const;
  constructor(message: string) {
    super(message);
    this.name = 'UnstorableValueError';
  }
}

/** Throws UnstorableValueError naming `what` (e.g. "the inputs") and where in it, when the value cannot be stored. */
export function assertStorable(value: unknown, what: string): void {
  const bad = findUnstorable(value);
  if (bad) throw new UnstorableValueError(`${what} hold${what.endsWith('s') ? '' : 's'} ${bad.what}${atPointer(bad)}, which Postgres cannot store`);
}
