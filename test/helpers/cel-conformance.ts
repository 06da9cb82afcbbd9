import { isDeepStrictEqual } from 'node:util';
import { tests } from '@bufbuild/cel-spec/testdata/conformance.js';
import { evaluateRaw } from '../../src/compiler/cel/evaluate.js';

/** The parts of the CEL conformance suite that braid's templates and waits rely on. */
export const SUITES = ['logic', 'comparisons', 'macros', 'string', 'fields', 'lists', 'plumbing'] as const;

interface ProtoValue {
  int64Value?: string;
  uint64Value?: string;
  doubleValue?: number | string;
  stringValue?: string;
  bytesValue?: string;
  boolValue?: boolean;
  nullValue?: unknown;
  listValue?: { values?: ProtoValue[] };
  mapValue?: { entries?: { key: ProtoValue; value: ProtoValue }[] };
  typeValue?: string;
  objectValue?: unknown;
  enumValue?: unknown;
}

interface Case {
  name: string;
  expr: string;
  value?: ProtoValue;
  evalError?: unknown;
  bindings?: Record<string, { value?: ProtoValue }>;
  typeEnv?: unknown[];
  container?: string;
  disableCheck?: boolean;
  checkOnly?: boolean;
}

export interface Outcome {
  suite: string;
  name: string;
  expr: string;
  status: 'pass' | 'fail' | 'skip';
  reason?: string;
}

type Node = { name: string; tests?: { original: Case }[]; suites?: Node[] };

function collect(node: Node, prefix: string, out: { path: string; c: Case }[]): void {
  for (const t of node.tests ?? []) out.push({ path: `${prefix}/${t.original.name}`, c: t.original });
  for (const s of node.suites ?? []) collect(s, `${prefix}/${s.name}`, out);
}

class Unsupported extends Error {}

function fromProto(v: ProtoValue): unknown {
  if (v.int64Value !== undefined) return BigInt(v.int64Value);
  if (v.uint64Value !== undefined) return BigInt(v.uint64Value);
  if (v.doubleValue !== undefined) return typeof v.doubleValue === 'string' ? Number(v.doubleValue) : v.doubleValue;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.bytesValue !== undefined) return new Uint8Array(Buffer.from(v.bytesValue, 'base64'));
  if (v.boolValue !== undefined) return v.boolValue;
  if ('nullValue' in v) return null;
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map(fromProto);
  if (v.mapValue !== undefined) {
    const out: Record<string, unknown> = {};
    for (const e of v.mapValue.entries ?? []) {
      const k = fromProto(e.key);
      if (typeof k !== 'string') throw new Unsupported('map with non-string keys');
      out[k] = fromProto(e.value);
    }
    return out;
  }
  throw new Unsupported(`value kind ${Object.keys(v).join(',')}`);
}

function normalize(v: unknown): unknown {
  // CEL uints arrive as a wrapper object whose valueOf() is the BigInt
  if (v && typeof v === 'object' && v.constructor?.name === 'UnsignedInt') return (v as { valueOf(): unknown }).valueOf();
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), normalize(x)]));
  if (Array.isArray(v)) return v.map(normalize);
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalize(x)]));
  }
  return v;
}

function same(actual: unknown, expected: unknown): boolean {
  if (typeof expected === 'number' && Number.isNaN(expected)) return typeof actual === 'number' && Number.isNaN(actual);
  return isDeepStrictEqual(normalize(actual), normalize(expected));
}

/** Runs the selected suites through braid's evaluation layer. */
export function runConformance(): Outcome[] {
  const outcomes: Outcome[] = [];
  for (const suite of SUITES) {
    const node = (tests as unknown as Node).suites!.find((s) => s.name === suite)!;
    const cases: { path: string; c: Case }[] = [];
    collect(node, suite, cases);
    for (const { path, c } of cases) {
      const base = { suite, name: path, expr: c.expr };
      if (c.container || c.checkOnly || c.value?.objectValue !== undefined || c.value?.enumValue !== undefined || c.value?.typeValue !== undefined) {
        outcomes.push({ ...base, status: 'skip', reason: 'needs protobuf messages, enums, type values or containers' });
        continue;
      }
      let context: Record<string, unknown>;
      let expected: unknown;
      try {
        context = Object.fromEntries(Object.entries(c.bindings ?? {}).map(([k, b]) => [k, fromProto(b.value ?? {})]));
        expected = c.evalError !== undefined ? undefined : fromProto(c.value ?? { boolValue: true });
      } catch (e) {
        outcomes.push({ ...base, status: 'skip', reason: (e as Error).message });
        continue;
      }
      try {
        const actual = evaluateRaw(c.expr, context);
        if (c.evalError !== undefined) outcomes.push({ ...base, status: 'fail', reason: `expected an error, got ${String(actual)}` });
        else if (same(actual, expected)) outcomes.push({ ...base, status: 'pass' });
        else outcomes.push({ ...base, status: 'fail', reason: `got ${String(actual)}, expected ${String(expected)}` });
      } catch (e) {
        if (c.evalError !== undefined) outcomes.push({ ...base, status: 'pass' });
        else outcomes.push({ ...base, status: 'fail', reason: `error: ${String((e as Error).message).split('\n')[0]}` });
      }
    }
  }
  return outcomes;
}
