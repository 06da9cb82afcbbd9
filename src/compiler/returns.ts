/**
 * A task's `returns`: the JSON Schema its handler's output must satisfy. One check for every place an output
 * meets it — a handler's return value at run time (code output_invalid) and a test's mock (test-mock-output).
 */
import type { ValidateFunction } from 'ajv';
import { canonicalJson } from './canonical-json.js';
import { makeUserSchemaAjv } from './schemas.js';

/** One way an output breaks its schema: where (a JSON pointer), what the schema says there, and by which keyword. */
export interface OutputProblem {
  pointer: string;
  message: string;
  keyword: string;
}

// schemas come from stored definitions, which are immutable: compiled once per schema object, and once per
// distinct schema when the same one arrives as a new object (read again from a row: an event's, a link's)
const compiled = new WeakMap<object, ValidateFunction>();
const bySchema = new Map<string, ValidateFunction>();
let ajv: ReturnType<typeof makeUserSchemaAjv> | undefined;

function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  let validate = compiled.get(schema);
  if (validate) return validate;
  const key = canonicalJson(schema);
  validate = bySchema.get(key);
  if (!validate) {
    validate = (ajv ??= makeUserSchemaAjv()).compile(schema);
    if (bySchema.size >= 500) bySchema.delete(bySchema.keys().next().value as string);
    bySchema.set(key, validate);
  }
  compiled.set(schema, validate);
  return validate;
}

/** The ways `output` breaks `schema` (none when it fits); the first few, most telling first. */
export function outputProblems(schema: Record<string, unknown>, output: unknown, max = 5): OutputProblem[] {
  const validate = validatorOf(schema);
  if (validate(output === undefined ? null : output)) return [];
  return (validate.errors ?? []).slice(0, max).map((e) => ({
    pointer: e.instancePath || '/',
    message: e.keyword === 'additionalProperties' ? `${e.message} "${String(e.params.additionalProperty)}"` : (e.message ?? 'is invalid'),
    keyword: e.keyword,
  }));
}

/** The problems as one line: `/risk must be number (type); / must have required property "level" (required)`. */
export function describeOutputProblems(problems: readonly OutputProblem[]): string {
  return problems.map((p) => `${p.pointer} ${p.message} (${p.keyword})`).join('; ');
}
