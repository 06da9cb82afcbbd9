/** A CEL type as @marcbachmann/cel-js declares it: a type name, or a schema of named fields. */
export type CelType = string | { [field: string]: CelType };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RESERVED = new Set([
  'true',
  'false',
  'null',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
  // built-in type names: a variable of the same name would shadow the conversion function
  'int',
  'uint',
  'double',
  'bool',
  'string',
  'bytes',
  'list',
  'map',
  'dyn',
  'type',
  'null_type',
  'timestamp',
  'duration',
  'google',
]);

export function isCelIdentifier(name: string): boolean {
  return IDENT.test(name) && !RESERVED.has(name);
}

export function isCelReserved(name: string): boolean {
  return RESERVED.has(name);
}

type JsonSchema = Record<string, unknown>;

/**
 * The CEL type templates see for a JSON Schema: integer -> int, number -> double, string, boolean -> bool,
 * array -> list, object with properties -> checked fields. Anything the schema leaves open is dyn.
 */
export function celTypeOfSchema(schema: unknown, depth = 0): CelType {
  if (typeof schema !== 'object' || schema === null || depth > 32) return 'dyn';
  const s = schema as JsonSchema;
  switch (s.type) {
    case 'integer':
      return 'int';
    case 'number':
      return 'double';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'array': {
      const item = celTypeOfSchema(s.items, depth + 1);
      return typeof item === 'string' ? `list<${item}>` : 'list<dyn>';
    }
    case 'object': {
      const props = s.properties;
      if (typeof props !== 'object' || props === null || Array.isArray(props)) return 'map<string, dyn>';
      const names = Object.keys(props);
      if (names.length === 0 || !names.every(isCelIdentifier)) return 'map<string, dyn>';
      return Object.fromEntries(names.map((name) => [name, celTypeOfSchema((props as JsonSchema)[name], depth + 1)]));
    }
    default:
      return 'dyn';
  }
}

/** A task as its record's type needs it: a task with `returns` (and no for_each) has a typed output. */
export interface TypedTask {
  name: string;
  returns?: Record<string, unknown>;
  for_each?: unknown;
}

/**
 * How `deps` (or, for the workflow output, `tasks`) reads the named tasks: a task with `returns` as
 * { state, output } with its output typed by the schema, the others dynamic (as are names in `names` but not
 * in `real`: a read excused elsewhere). Nothing typed: no declaration, so the context's map<string, dyn> stays.
 */
export function taskRecordTypes(
  variable: 'deps' | 'tasks',
  tasks: ReadonlyMap<string, TypedTask>,
  names: readonly string[],
  real?: ReadonlySet<string>,
): Record<string, CelType> {
  const fields: Record<string, CelType> = {};
  let typed = false;
  for (const name of names) {
    const t = real === undefined || real.has(name) ? tasks.get(name) : undefined;
    if (t?.returns !== undefined && t.for_each === undefined) {
      fields[name] = { state: 'string', output: celTypeOfSchema(t.returns) };
      typed = true;
    } else fields[name] = 'dyn';
  }
  if (!typed || !names.every(isCelIdentifier)) return {};
  return { [variable]: fields };
}

/** The inputs variable's type: with no inputs schema, anything goes. */
export function inputsType(inputsSchema: unknown): CelType {
  if (inputsSchema === undefined) return 'map<string, dyn>';
  const t = celTypeOfSchema(inputsSchema);
  return t === 'dyn' ? 'map<string, dyn>' : t;
}

/** `event` as a trigger reads it: its payload typed by the event's schema. */
export function eventType(payloadSchema: unknown): CelType {
  return { id: 'string', name: 'string', time: 'google.protobuf.Timestamp', payload: inputsType(payloadSchema) };
}

/**
 * Brings JSON values into the CEL value space: numbers at int-typed positions become BigInt (CEL ints);
 * every other JSON number stays a double.
 */
export function toCelValue(value: unknown, type: CelType): unknown {
  if (value === null || value === undefined) return value;
  if (typeof type === 'string') {
    if (type === 'int') return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value;
    const list = /^list<(.+)>$/.exec(type);
    if (list && Array.isArray(value)) return list[1] === 'dyn' ? value : value.map((v) => toCelValue(v, list[1]));
    return value;
  }
  if (typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [field, fieldType] of Object.entries(type)) if (field in out) out[field] = toCelValue(out[field], fieldType);
  return out;
}

/** Brings a CEL result back to JSON: ints to numbers, timestamps to RFC 3339, maps to objects. */
export function fromCelValue(value: unknown): unknown {
  if (typeof value === 'bigint') {
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new RangeError(`integer ${value} does not fit in a JSON number exactly`);
    }
    return Number(value);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`${value} is not a JSON number`);
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(fromCelValue);
  // built with fromEntries, which defines own properties: a "__proto__" key stays a key
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), fromCelValue(v)]));
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromCelValue(v)]));
  // CEL durations and types print as their CEL text form
  return String(value);
}
