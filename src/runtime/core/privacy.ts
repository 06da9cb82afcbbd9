/**
 * The privacy room. A handler sees its attempt's sensitive values in clear (its args, its deps' outputs, its
 * wait's payloads); whatever it makes of them that braid stores or prints — an error's message, name, stack and
 * code, a `ctx.fail` text, an HTTP kind's body excerpt, a log line, a stream chunk, an output — passes through
 * here first. The statements that store those take `Scrubbed<T>`, which only this module makes: a clear text
 * does not type-check where a stored one goes, so a new path cannot forget the step.
 */
import { REDACTED, secretsIn } from '../db/sealing.js';
import { storableText } from './storable.js';

declare const scrubbed: unique symbol;
/** A value that went through the privacy room: none of its attempt's sensitive values is in it in clear. */
export type Scrubbed<T> = T & { readonly [scrubbed]: true };

/** Separators people and formatters put inside a long number (a card's groups, a phone's, an IBAN's). */
const SEPARATORS = '[\\s\\-.]{0,3}';
const escapeRegExp = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

/**
 * The patterns a sensitive value is recognised by in text: itself, its JSON-escaped spelling, and, for a value
 * holding four or more digits among letters and digits only (a card, an account, a phone number), the same
 * characters with spaces, dashes or dots between them. Each separator run is bounded and no pattern nests a
 * quantifier, so matching stays linear in the text.
 */
function renderings(secret: string): string[] {
  const out = [escapeRegExp(secret)];
  const json = JSON.stringify(secret).slice(1, -1);
  if (json !== secret) out.push(escapeRegExp(json));
  const core = secret.replace(/[\s\-.]/g, '');
  if (/^[0-9A-Za-z]+$/.test(core) && (core.match(/[0-9]/g)?.length ?? 0) >= 4 && core.length <= 256) out.push([...core].map(escapeRegExp).join(SEPARATORS));
  return out;
}

/** An attempt's sensitive values in clear, as text: what nothing stored or printed of the attempt may hold. */
export class Secrets {
  static readonly none = new Secrets(new Set());
  private matcher?: RegExp;

  private constructor(private readonly values: ReadonlySet<string>) {}

  /** The secrets of these values as braid's reads opened them (args, deps' outputs, payloads), and of any sets given. */
  static of(...sources: readonly (unknown | ReadonlySet<string>)[]): Secrets {
    let all: Set<string> | undefined;
    for (const source of sources) {
      const found = source instanceof Set ? (source as ReadonlySet<string>) : secretsIn(source);
      if (!found || found.size === 0) continue;
      all ??= new Set();
      for (const v of found) all.add(v);
    }
    return all ? new Secrets(all) : Secrets.none;
  }

  get size(): number {
    return this.values.size;
  }

  /** The values themselves (to seal what holds one, to hand to another attempt's log). */
  get clear(): ReadonlySet<string> {
    return this.values;
  }

  /** Text with every sensitive value it holds (and its common renderings) replaced by `[redacted]`. */
  text(text: string): string {
    if (this.values.size === 0) return text;
    this.matcher ??= new RegExp(
      [...this.values]
        .sort((a, b) => b.length - a.length)
        .flatMap(renderings)
        .join('|'),
      'g',
    );
    this.matcher.lastIndex = 0;
    return text.replace(this.matcher, REDACTED);
  }

  /** A JSON value with every string scrubbed as text and every number that is a sensitive value redacted. */
  json(value: unknown): unknown {
    if (this.values.size === 0) return value;
    const walk = (v: unknown, depth: number): unknown => {
      if (typeof v === 'string') return this.text(v);
      if (typeof v === 'number') return this.values.has(String(v)) ? REDACTED : v;
      // deeper than any JSON braid stores: redacted whole rather than walked
      if (depth > 256) return REDACTED;
      if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
      if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [this.text(k), walk(x, depth + 1)]));
      return v;
    };
    return walk(value, 0);
  }
}

/** A text as it may be stored or printed: scrubbed, and made storable (U+0000 and lone surrogates escaped). */
export function scrubText(text: string, secrets: Secrets): Scrubbed<string> {
  return storableText(secrets.text(text)) as Scrubbed<string>;
}

/** A JSON value as it may be stored or shown: every string and number holding a sensitive value redacted. */
export function scrubJson<T>(value: T, secrets: Secrets): Scrubbed<T> {
  return secrets.json(value) as Scrubbed<T>;
}

/** A JSON value's text (`text`, its JSON.stringify) as it may be stored: the same text when there are no secrets. */
export function scrubJsonText(value: unknown, text: string, secrets: Secrets): Scrubbed<string> {
  return (secrets.size === 0 ? text : JSON.stringify(secrets.json(value))) as Scrubbed<string>;
}

/** The texts of an attempt's error (sql/attempts.ts TaskError). */
interface ErrorTexts {
  message: string;
  name?: string;
  stack?: string;
  code?: string;
}

/** An attempt's error as it may be stored: each of its texts scrubbed (its code too: a code is text a handler chose). */
export function scrubError<E extends ErrorTexts>(error: E, secrets: Secrets): Scrubbed<E> {
  const out: E = { ...error, message: scrubText(error.message, secrets) };
  if (error.name !== undefined) out.name = scrubText(error.name, secrets);
  if (error.stack !== undefined) out.stack = scrubText(error.stack, secrets);
  if (error.code !== undefined) out.code = scrubText(error.code, secrets);
  return out as Scrubbed<E>;
}

/** An attempt's end (sql/attempts.ts AttemptOutcome) as it may be stored and printed. */
export function scrubOutcome<O extends { type: string; error?: ErrorTexts }>(outcome: O, secrets: Secrets): Scrubbed<O> {
  return (outcome.error === undefined ? outcome : { ...outcome, error: scrubError(outcome.error, secrets) }) as Scrubbed<O>;
}

/** A text braid wrote itself from no handler's data: made storable. */
export function braidText(text: string): Scrubbed<string> {
  return scrubText(text, Secrets.none);
}

/** A JSON value braid wrote itself from no handler's data. */
export function braidJson<T>(value: T): Scrubbed<T> {
  return value as Scrubbed<T>;
}

/** An end braid wrote itself from no handler's data (a rescue's, a cancel's): stored as it is, made storable. */
export function braidOutcome<O extends { type: string; error?: ErrorTexts }>(outcome: O): Scrubbed<O> {
  return scrubOutcome(outcome, Secrets.none);
}
