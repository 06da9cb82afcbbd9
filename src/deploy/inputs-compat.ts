import { canonicalJson } from '../compiler/canonical-json.js';

/** One way a new inputs schema refuses what the old one accepted, at a path inside the new `inputs` block. */
export interface Narrowing {
  /** Path from the definition root (`inputs`, `properties`, NAME, ...), for the diagnostic's position. */
  path: (string | number)[];
  /** Where in the inputs, for messages: `inputs.order.id`. */
  at: string;
  message: string;
}

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'array', 'object'];

/** The JSON types a schema lets through (integer is a number; undefined: any). */
function typesOf(s: Schema): Set<string> | undefined {
  const t = s.type;
  if (t === undefined) return undefined;
  const list = (Array.isArray(t) ? t : [t]).filter((x): x is string => typeof x === 'string' && TYPES.includes(x));
  return new Set(list);
}

function accepts(types: Set<string> | undefined, type: string): boolean {
  return types === undefined || types.has(type) || (type === 'integer' && types.has('number'));
}

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'] as const;
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'] as const;

/**
 * The ways `next` refuses inputs that `prev` accepted, as far as braid can tell from the keywords that decide
 * it (type, required without a default, enum, const, bounds, pattern, format, additionalProperties, and the
 * same recursively in properties and items). Widening is never reported; combinators (anyOf, oneOf, allOf,
 * $ref) that differ are reported once, as something to check by hand.
 */
export function inputsNarrowings(prev: unknown, next: unknown): Narrowing[] {
  const out: Narrowing[] = [];
  compare(isSchema(prev) ? prev : {}, isSchema(next) ? next : {}, ['inputs'], 'inputs', out);
  return out;
}

function compare(prev: Schema, next: Schema, path: (string | number)[], at: string, out: Narrowing[]): void {
  const say = (key: string | undefined, message: string) => out.push({ path: key === undefined ? path : [...path, key], at, message });
  const prevTypes = typesOf(prev);
  const nextTypes = typesOf(next);
  if (nextTypes !== undefined) {
    const lost = prevTypes === undefined ? [] : [...prevTypes].filter((t) => !accepts(nextTypes, t));
    // inputs are always an object: a first inputs schema saying so narrows nothing
    if (prevTypes === undefined && path.length === 1 && nextTypes.size === 1 && nextTypes.has('object')) {
      compareRest(prev, next, path, at, out, say);
      return;
    }
    if (prevTypes === undefined) say('type', `${at} must now be ${[...nextTypes].join(' or ')} (any type was accepted)`);
    else if (lost.length > 0) say('type', `${at} no longer accepts ${lost.join(' or ')} (type ${[...prevTypes].join(' | ')} -> ${[...nextTypes].join(' | ')})`);
  }
  compareRest(prev, next, path, at, out, say);
}

type Say = (key: string | undefined, message: string) => void;

function compareRest(prev: Schema, next: Schema, path: (string | number)[], at: string, out: Narrowing[], say: Say): void {
  if (Array.isArray(next.enum)) {
    const allowed = new Set(next.enum.map((v) => canonicalJson(v)));
    const dropped = Array.isArray(prev.enum) ? prev.enum.filter((v) => !allowed.has(canonicalJson(v))) : undefined;
    if (dropped === undefined) say('enum', `${at} must now be one of ${next.enum.map((v) => JSON.stringify(v)).join(', ')}`);
    else if (dropped.length > 0) say('enum', `${at} no longer accepts ${dropped.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (next.const !== undefined && (prev.const === undefined || canonicalJson(prev.const) !== canonicalJson(next.const)))
    say('const', `${at} must now be ${JSON.stringify(next.const)}`);
  for (const key of LOWER_BOUNDS) {
    if (typeof next[key] === 'number' && (typeof prev[key] !== 'number' || (next[key] as number) > (prev[key] as number)))
      say(key, `${at}: ${key} raised to ${next[key]}${typeof prev[key] === 'number' ? ` (was ${prev[key]})` : ''}`);
  }
  for (const key of UPPER_BOUNDS) {
    if (typeof next[key] === 'number' && (typeof prev[key] !== 'number' || (next[key] as number) < (prev[key] as number)))
      say(key, `${at}: ${key} lowered to ${next[key]}${typeof prev[key] === 'number' ? ` (was ${prev[key]})` : ''}`);
  }
  for (const key of ['pattern', 'format'] as const) {
    if (typeof next[key] === 'string' && next[key] !== prev[key])
      say(key, `${at} must now match ${key} ${JSON.stringify(next[key])}${typeof prev[key] === 'string' ? ` (was ${JSON.stringify(prev[key])})` : ''}`);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', '$ref', 'not', 'if'] as const) {
    if (next[key] !== undefined && canonicalJson(next[key]) !== canonicalJson(prev[key] ?? null))
      say(key, `${at}: ${key} changed, which braid cannot compare: check by hand that earlier inputs still pass`);
  }
  compareObject(prev, next, path, at, out, say);
  if (isSchema(next.items)) compare(isSchema(prev.items) ? prev.items : {}, next.items, [...path, 'items'], `${at}[]`, out);
}

function compareObject(prev: Schema, next: Schema, path: (string | number)[], at: string, out: Narrowing[], say: Say): void {
  const prevRequired = new Set(Array.isArray(prev.required) ? prev.required.map(String) : []);
  const nextProps = isSchema(next.properties) ? next.properties : {};
  const prevProps = isSchema(prev.properties) ? prev.properties : {};
  if (Array.isArray(next.required)) {
    next.required.forEach((name, i) => {
      const key = String(name);
      const property = nextProps[key];
      if (prevRequired.has(key) || (isSchema(property) && 'default' in property)) return;
      out.push({ path: [...path, 'required', i], at, message: `${at}.${key} is now required and has no default: a start without it is refused` });
    });
  }
  if (next.additionalProperties === false && prev.additionalProperties !== false)
    say('additionalProperties', `${at} refuses undeclared fields now (additionalProperties: false)`);
  for (const [key, property] of Object.entries(nextProps)) {
    // a field the old schema did not declare was accepted as anything, but no caller had a reason to send it
    if (!isSchema(property) || !isSchema(prevProps[key])) continue;
    compare(prevProps[key], property, [...path, 'properties', key], `${at}.${key}`, out);
  }
}
