/**
 * Python declarations of what the definitions promise handlers (`braid types --lang python`): each workflow's
 * start inputs, each kind's args (typed as `braid types` types them for TypeScript: a template by its CEL type, a
 * plain read by its schema) and output (its `returns`) as TypedDicts, a Protocol per kind for its handler, and
 * `Handlers`, the map of them a Python worker takes. mypy --strict (or pyright) then checks a handlers module.
 */
import { scanTemplates, singleTemplate } from './cel/templates.js';
import { type NormalizedTask, START_KIND } from './normalize.js';
import { type LegacyVersion, type TemplateRead, templateReaders } from './type-declarations.js';
import type { WorkflowDefinition } from './validate.js';

type Schema = Record<string, unknown> | boolean | undefined;
type Reader = (expr: string) => TemplateRead;

const isSchema = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The named types a module declares, in the order they must come (a TypedDict before any that uses it). */
class Declarations {
  private readonly lines: string[] = [];
  private readonly used = new Set<string>();
  private readonly bodies = new Map<string, string>();

  /** A TypedDict of these fields under a name made from `hint` (the same fields again: the same name). */
  typedDict(hint: string, fields: { name: string; type: string; optional: boolean }[]): string {
    const body = `{${fields.map((f) => `${JSON.stringify(f.name)}: ${f.optional ? `NotRequired[${f.type}]` : f.type}`).join(', ')}}`;
    const known = this.bodies.get(`${hint}\u0000${body}`);
    if (known) return known;
    const name = this.fresh(hint);
    // the functional form takes any key (a hyphen, a Python keyword) as JSON gives it
    this.lines.push(`${name} = TypedDict(${JSON.stringify(name)}, ${body})`);
    this.bodies.set(`${hint}\u0000${body}`, name);
    return name;
  }

  /** A type alias (a union, or a kind's output that is not an object). */
  alias(hint: string, type: string): string {
    const name = this.fresh(hint);
    this.lines.push(`${name} = ${type}`);
    return name;
  }

  /** The Protocol of a kind's handler: called with its args and the attempt's context, returning its output. */
  protocol(hint: string, args: string, output: string): string {
    const name = this.fresh(hint);
    this.lines.push('', '', `class ${name}(Protocol):`, `    def __call__(self, args: ${args}, ctx: Any, /) -> ${output}: ...`, '', '');
    return name;
  }

  text(): string {
    return this.lines.join('\n');
  }

  private fresh(hint: string): string {
    let name = hint;
    for (let n = 2; this.used.has(name); n++) name = `${hint}${n}`;
    this.used.add(name);
    return name;
  }
}

/** `send_email` -> `SendEmail`: a kind's or workflow's name as the start of a class name. */
export function pascal(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const joined = words.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
  return /^[0-9]/.test(joined) || joined === '' ? `K${joined}` : joined;
}

function union(types: readonly string[]): string {
  const distinct = [...new Set(types)];
  if (distinct.includes('Any')) return 'Any';
  return distinct.length === 0 ? 'NoReturn' : distinct.join(' | ');
}

/** A JSON Schema (as far as it says) as a Python type; an object with properties becomes a TypedDict named from `hint`. */
function schemaPy(d: Declarations, schema: Schema, hint: string, depth = 0): string {
  if (schema === undefined || schema === true || depth > 32) return 'dict[str, Any]';
  if (schema === false) return 'NoReturn';
  if (Array.isArray(schema.enum)) return schema.enum.length === 0 ? 'NoReturn' : union(schema.enum.map(literal));
  if (schema.const !== undefined) return literal(schema.const);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return union(alternatives.map((s, i) => schemaPy(d, s as Schema, `${hint}${i + 1}`, depth + 1)));
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return union(
    types.map((type) => {
      switch (type) {
        case 'string':
          return 'str';
        case 'integer':
          return 'int';
        case 'number':
          return 'float';
        case 'boolean':
          return 'bool';
        case 'null':
          return 'None';
        case 'array':
          return `list[${schema.items === undefined ? 'Any' : schemaPy(d, schema.items as Schema, `${hint}Item`, depth + 1)}]`;
        case 'object': {
          const props = isSchema(schema.properties) ? schema.properties : {};
          if (Object.keys(props).length === 0) return 'dict[str, Any]';
          const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
          const fields = Object.entries(props).map(([k, v]) => ({
            name: k,
            type: schemaPy(d, v as Schema, hint + pascal(k), depth + 1),
            optional: !required.has(k),
          }));
          return d.typedDict(hint, fields);
        }
        default:
          return 'Any';
      }
    }),
  );
}

function literal(v: unknown): string {
  if (v === null) return 'None';
  // Literal takes ints, strings and booleans: another number is a float
  if (typeof v === 'number' && !Number.isSafeInteger(v)) return 'float';
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    return `Literal[${typeof v === 'boolean' ? (v ? 'True' : 'False') : JSON.stringify(v)}]`;
  return 'Any';
}

/** A CEL type as the JSON value a handler receives. */
function celPy(type: string): string {
  const t = type.trim();
  if (['string', 'bytes', 'google.protobuf.Timestamp', 'google.protobuf.Duration'].includes(t)) return 'str';
  if (t === 'int' || t === 'uint') return 'int';
  if (t === 'double') return 'float';
  if (t === 'bool') return 'bool';
  if (t === 'null_type') return 'None';
  if (t === 'list') return 'list[Any]';
  if (t === 'map') return 'dict[str, Any]';
  const list = /^list<(.+)>$/.exec(t);
  if (list) return `list[${celPy(list[1])}]`;
  const map = /^map<\s*string\s*,\s*(.+)>$/.exec(t);
  if (map) return `dict[str, ${celPy(map[1])}]`;
  return 'Any';
}

/** A value as written in args: a lone template typed by what it reads, other strings str, literals by their JSON type. */
function valuePy(d: Declarations, value: unknown, read: Reader, hint: string, depth = 0): { type: string; optional: boolean } {
  if (typeof value === 'string') {
    const scan = scanTemplates(value);
    if (!value.includes('${{') || singleTemplate(value, scan) === undefined) return { type: 'str', optional: false };
    const r = read(scan.spans[0].expr);
    return 'schema' in r ? { type: schemaPy(d, r.schema as Schema, hint, depth), optional: r.optional } : { type: celPy(r.cel), optional: false };
  }
  if (typeof value === 'number') return { type: Number.isInteger(value) ? 'int' : 'float', optional: false };
  if (typeof value === 'boolean') return { type: 'bool', optional: false };
  if (value === null || depth > 32) return { type: value === null ? 'None' : 'Any', optional: false };
  if (Array.isArray(value)) {
    const items = value.map((v) => valuePy(d, v, read, `${hint}Item`, depth + 1).type);
    return { type: `list[${items.length === 0 ? 'Any' : union(items)}]`, optional: false };
  }
  if (isSchema(value)) {
    const fields = Object.entries(value).map(([k, v]) => {
      const typed = valuePy(d, v, read, hint + pascal(k), depth + 1);
      return { name: k, ...typed };
    });
    return { type: fields.length === 0 ? 'dict[str, Any]' : d.typedDict(hint, fields), optional: false };
  }
  return { type: 'Any', optional: false };
}

/** The module's text: see the module's comment. */
export function pythonDeclarations(
  definitions: readonly Pick<WorkflowDefinition, 'name' | 'normalized'>[],
  legacy: readonly LegacyVersion[] = [],
  /** The kinds this Python worker serves: Handlers requires exactly them (default: every kind). */
  serves: (kind: string) => boolean = () => true,
): string {
  const d = new Declarations();
  for (const def of [...definitions].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const inputs = def.normalized.inputs as Schema;
    const type = schemaPy(d, inputs, `${pascal(def.name)}Inputs`);
    if (!/^[A-Z]/.test(type)) d.alias(`${pascal(def.name)}Inputs`, type);
  }
  const versions = [...definitions, ...legacy];
  const tasks = versions.flatMap((v) => v.normalized.tasks.filter((t) => t.kind !== START_KIND));
  const shared = new Set(tasks.map((t) => t.kind).filter((k, i, all) => all.indexOf(k) !== i));
  const args = new Map<string, string[]>();
  const outputs = new Map<string, string[]>();
  for (const def of versions) {
    const readers = templateReaders(def.normalized);
    for (const t of def.normalized.tasks) {
      if (t.kind === START_KIND) continue;
      // a kind several tasks share: each task's variant named after it, the kind's type their union
      const base = pascal(t.kind);
      const variant = shared.has(t.kind) ? pascal(`${def.name}_${t.name}`) : '';
      args.set(t.kind, [...(args.get(t.kind) ?? []), valuePy(d, t.args, readers(t), `${base}Args${variant}`).type]);
      outputs.set(t.kind, [...(outputs.get(t.kind) ?? []), returnsPy(d, t, `${base}Output${variant}`)]);
    }
  }
  const kinds = [...args.keys()].sort();
  const handlers = kinds.filter(serves).map((kind) => {
    const base = pascal(kind);
    const a = named(d, `${base}Args`, args.get(kind)!);
    const o = named(d, `${base}Output`, outputs.get(kind)!);
    return `${JSON.stringify(kind)}: ${d.protocol(`${base}Handler`, a, o)}`;
  });
  const body = d.text();
  return [
    '# Written by `braid types --lang python` from the definitions: do not edit; run it again after changing them.',
    '# Each kind: <Kind>Args and <Kind>Output (TypedDicts), <Kind>Handler (a Protocol); Handlers maps kinds to them.',
    'from typing import Any, Literal, NoReturn, NotRequired, Protocol, TypedDict',
    '',
    '__all__ = ["Handlers"]',
    '',
    body.replace(/\n{3,}/g, '\n\n\n').trim(),
    '',
    '',
    `Handlers = TypedDict("Handlers", {${handlers.join(', ')}})`,
    '',
  ].join('\n');
}

/** A kind's output: its `returns`, or Any where the task declares none. */
function returnsPy(d: Declarations, t: NormalizedTask, hint: string): string {
  return t.returns === undefined ? 'Any' : schemaPy(d, t.returns as Schema, hint);
}

/** One name for a kind's types: the one type, or an alias of their union. */
function named(d: Declarations, hint: string, types: string[]): string {
  const u = union(types);
  return IDENTIFIER.test(u) ? u : d.alias(hint, u);
}
