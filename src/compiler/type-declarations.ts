import { checkEnvironment } from './cel/environments.js';
import { itemSource, outputSchemas, type ReadRoots, referenceSchema } from './cel/optional-reads.js';
import { loneReference } from './cel/reference.js';
import { scanTemplates, singleTemplate } from './cel/templates.js';
import { inputsType, taskRecordTypes } from './cel/types.js';
import { type NormalizedTask, START_KIND } from './normalize.js';
import type { WorkflowDefinition } from './validate.js';

/** An older version that workflows still run on: its kinds' args stay in KindArgs until they end. */
export interface LegacyVersion {
  name: string;
  hash: string;
  running: number;
  normalized: WorkflowDefinition['normalized'];
}

/**
 * TypeScript declarations of what the definitions promise handlers and callers (`braid types`): each
 * workflow's start inputs, from its inputs schema; the args each task kind receives, from the args as written
 * (a template's type is its CEL type, a dep's output typed by its `returns`; tasks sharing a kind give a
 * union); and what each kind returns (KindOutputs), over the definitions and the older versions with running
 * workflows (`legacy`).
 */
export function typeDeclarations(
  definitions: readonly Pick<WorkflowDefinition, 'name' | 'normalized'>[],
  legacy: readonly LegacyVersion[] = [],
  /** Kinds served outside the handlers module (over HTTP, by another worker), with where: not this module's to type. */
  elsewhere: ReadonlyMap<string, string> = new Map(),
): string {
  const inputs = [...definitions].sort((a, b) => (a.name < b.name ? -1 : 1)).map((d) => `  ${key(d.name)}: ${schemaType(d.normalized.inputs, 2)};`);
  const kinds = new Map<string, Set<string>>();
  const current = new Set(definitions.flatMap((d) => d.normalized.tasks.map((t) => t.kind)));
  const onlyLegacy = new Map<string, string[]>();
  for (const v of legacy) {
    for (const kind of new Set(v.normalized.tasks.map((t) => t.kind))) {
      if (kind !== START_KIND && !current.has(kind))
        onlyLegacy.set(kind, [...(onlyLegacy.get(kind) ?? []), `${v.name} ${v.hash.slice(0, 12)} (${v.running} running)`]);
    }
  }
  const outputs = new Map<string, Set<string>>();
  const waits = new Map<string, Set<string>>();
  const streams = new Map<string, Set<string>>();
  for (const d of [...definitions, ...legacy]) {
    const readers = templateReaders(d.normalized);
    for (const t of d.normalized.tasks) {
      if (t.kind === START_KIND || elsewhere.has(t.kind)) continue;
      const reader = readers(t);
      const typeOf = (expr: string, depth: number): Typed => {
        const read = reader(expr);
        return 'schema' in read ? { type: schemaType(read.schema as Schema, depth), optional: read.optional } : { type: celToTs(read.cel), optional: false };
      };
      const type = valueType(t.args, typeOf, 2);
      kinds.set(t.kind, (kinds.get(t.kind) ?? new Set()).add(type));
      outputs.set(t.kind, (outputs.get(t.kind) ?? new Set()).add(t.returns === undefined ? 'unknown' : schemaType(t.returns as Schema, 2)));
      waits.set(t.kind, (waits.get(t.kind) ?? new Set()).add(waitShape(t.wait)));
      streams.set(t.kind, (streams.get(t.kind) ?? new Set()).add(streamsShape(t.streams)));
    }
  }
  const args = [...kinds]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .flatMap(([kind, types]) => [
      // a kind only older versions use stays typed while workflows run on them: its handler must stay
      ...(onlyLegacy.has(kind) ? [`  /** Only workflows running on older versions use this kind: ${onlyLegacy.get(kind)!.join(', ')}. */`] : []),
      `  ${key(kind)}: ${[...types].join(' | ')};`,
    ]);
  const returned = [...outputs]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([kind, types]) => `  ${key(kind)}: ${types.has('unknown') ? 'unknown' : [...types].join(' | ')};`);
  const served = [...elsewhere].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, where]) => `//   ${kind}: ${where}`);
  const note = served.length === 0 ? [] : ['// Kinds served outside the handlers module (braid.config.yaml kinds:), left out below:', ...served, ''];
  return declarationsText(inputs, args, returned, byKind(waits, ' | '), byKind(streams, ' & '), note);
}

/** Each kind's shapes joined (a union of waits, an intersection of streams), a line per kind in name order. */
/** What a template in a task's args reads: a field's schema (optional where the data may lack it), else its CEL type. */
export type TemplateRead = { schema: unknown; optional: boolean } | { cel: string };

/** For each task of a definition, how its args' templates are typed (environments shared between tasks alike). */
export function templateReaders(def: WorkflowDefinition['normalized']): (t: NormalizedTask) => (expr: string) => TemplateRead {
  const byName = new Map(def.tasks.map((t) => [t.name, t]));
  const returns = outputSchemas(def.tasks);
  const envs = new Map<string, ReturnType<typeof checkEnvironment>>();
  return (t) => {
    // an arg rendered from a dep's output has that output's type, where the dep declares `returns`
    const context = t.for_each !== undefined ? 'args_item' : 'args';
    const deps = taskRecordTypes('deps', byName, t.deps);
    const envKey = `${context}\u0000${JSON.stringify(deps)}`;
    let env = envs.get(envKey);
    if (!env) envs.set(envKey, (env = checkEnvironment(context, inputsType(def.inputs), deps)));
    // a plain read of a field is typed by its schema, and optional where the data may lack it (the key is then left out)
    const roots: ReadRoots = { inputs: def.inputs, outputs: { variable: 'deps', returns } };
    roots.item = itemSource(t.for_each, roots);
    return (expr) => {
      const chain = loneReference(expr);
      const read = chain && referenceSchema(chain, roots);
      if (read) return { schema: read.schema, optional: read.optional };
      return { cel: String(env.check(expr).type ?? 'dyn') };
    };
  };
}

const byKind = (shapes: Map<string, Set<string>>, join: string): string[] =>
  [...shapes].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, s]) => `  ${key(kind)}: ${[...s].join(join)};`);

function declarationsText(inputs: string[], args: string[], returned: string[], waited: string[], streamed: string[], note: string[]): string {
  return [
    '// Written by `braid types` from the definitions: do not edit; run it again after changing them.',
    '',
    ...note,
    '/** The start inputs of each workflow. */',
    'export interface Inputs {',
    ...inputs,
    '}',
    '',
    '/** The args each task kind receives (a union when several tasks share the kind). */',
    'export interface KindArgs {',
    ...args,
    '}',
    '',
    "/** What each kind's handler returns, from its tasks' `returns` (unknown where a task of the kind has none). */",
    'export interface KindOutputs {',
    ...returned,
    '}',
    '',
    "/** The terms of each kind's wait and their kinds, as ctx.wait shows them (null where a task of the kind has no wait). */",
    'export interface KindWaits {',
    ...waited,
    '}',
    '',
    "/** The streams each kind's handler may write and the type of their chunks, as ctx.stream(NAME).write takes them. */",
    'export interface KindStreams {',
    ...streamed,
    '}',
    '',
  ].join('\n');
}

/** A task's streams by name with the type of their chunks, or an empty record without any. */
function streamsShape(streams: NormalizedTask['streams']): string {
  if (!streams || Object.keys(streams).length === 0) return 'Record<never, never>';
  return `{ ${Object.entries(streams)
    .map(([name, s]) => `${key(name)}: ${s.schema ? schemaType(s.schema as Schema, 2) : 'unknown'};`)
    .join(' ')} }`;
}

/** A wait's terms by name with their kinds (`{ approvals: 'signal'; sla: 'timer' }`), or null without one. */
function waitShape(wait: NormalizedTask['wait']): string {
  if (!wait) return 'null';
  return `{ ${wait.terms.map((t) => `${key(t.name)}: '${t.kind}';`).join(' ')} }`;
}

function key(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

function pad(depth: number): string {
  return '  '.repeat(depth);
}

/** A template's type, and whether its key may be left out (a plain read of a field that may be absent). */
interface Typed {
  type: string;
  optional: boolean;
}

/** A value as written in args: templates typed by CEL (plain reads by their schema), literals by their JSON type. */
function valueType(value: unknown, templateType: (expr: string, depth: number) => Typed, depth: number): string {
  return typedValue(value, templateType, depth).type;
}

function typedValue(value: unknown, templateType: (expr: string, depth: number) => Typed, depth: number): Typed {
  if (typeof value === 'string') {
    if (!value.includes('${{')) return { type: 'string', optional: false };
    const scan = scanTemplates(value);
    const single = singleTemplate(value, scan);
    return single !== undefined ? templateType(scan.spans[0].expr, depth) : { type: 'string', optional: false };
  }
  return { type: literalType(value, templateType, depth), optional: false };
}

function literalType(value: unknown, templateType: (expr: string, depth: number) => Typed, depth: number): string {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    const items = [...new Set(value.map((v) => valueType(v, templateType, depth + 1)))];
    return items.length === 0 ? 'unknown[]' : `(${items.join(' | ')})[]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return 'Record<string, never>';
    const lines = entries.map(([k, v]) => {
      const typed = typedValue(v, templateType, depth + 1);
      return `${pad(depth)}${key(k)}${typed.optional ? '?' : ''}: ${typed.type};`;
    });
    return `{\n${lines.join('\n')}\n${pad(depth - 1)}}`;
  }
  return 'unknown';
}

/** A CEL type as the JSON value a handler receives. */
function celToTs(type: string): string {
  const t = type.trim();
  if (t === 'string' || t === 'google.protobuf.Timestamp' || t === 'google.protobuf.Duration' || t === 'bytes') return 'string';
  if (t === 'int' || t === 'uint' || t === 'double') return 'number';
  if (t === 'bool') return 'boolean';
  if (t === 'null_type') return 'null';
  if (t === 'list') return 'unknown[]';
  if (t === 'map') return 'Record<string, unknown>';
  const list = /^list<(.+)>$/.exec(t);
  if (list) return `${celToTs(list[1])}[]`;
  const map = /^map<\s*string\s*,\s*(.+)>$/.exec(t);
  if (map) return `Record<string, ${celToTs(map[1])}>`;
  return 'unknown';
}

type Schema =
  | {
      type?: unknown;
      properties?: Record<string, Schema>;
      required?: unknown;
      items?: Schema;
      enum?: unknown[];
      const?: unknown;
      anyOf?: Schema[];
      oneOf?: Schema[];
    }
  | boolean
  | undefined;

/** A JSON Schema (as far as it says) as a TypeScript type. */
function schemaType(schema: Schema, depth: number): string {
  if (schema === undefined || schema === true) return 'Record<string, unknown>';
  if (schema === false) return 'never';
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ') || 'never';
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union)) return union.map((s) => schemaType(s, depth)).join(' | ') || 'unknown';
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const out = types.map((type) => {
    switch (type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return `${wrap(schema.items === undefined ? 'unknown' : schemaType(schema.items, depth + 1))}[]`;
      case 'object': {
        const props = schema.properties ?? {};
        const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
        const lines = Object.entries(props).map(([k, v]) => `${pad(depth)}${key(k)}${required.has(k) ? '' : '?'}: ${schemaType(v, depth + 1)};`);
        return lines.length === 0 ? 'Record<string, unknown>' : `{\n${lines.join('\n')}\n${pad(depth - 1)}}`;
      }
      default:
        return 'unknown';
    }
  });
  return [...new Set(out)].join(' | ');
}

function wrap(type: string): string {
  return /^[\w<>[\], ]+$/.test(type) && !type.includes('|') ? type : `(${type})`;
}
