/**
 * A task's `returns`: the JSON Schema its handler's output must satisfy. One check for every place an output
 * meets it — a handler's return value at run time (code output_invalid) and a test's mock (test-mock-output).
 */
import type { ValidateFunction } from 'ajv';
import { makeUserSchemaAjv } from './schemas.js';

/** One way an output breaks its schema: where (a JSON pointer), what the schema says there, and by which keyword. */
export interface OutputProblem {
  pointer: string;
  message: string;
  keyword: string;
}

// schemas come from stored definitions, which are immutable: compiled once per schema object
const compiled = new WeakMap<object, ValidateFunction>();
let ajv: ReturnType<typeof makeUserSchemaAjv> | undefined;

/** The ways `output` breaks `schema` (none when it fits); the first few, most telling first. */
export function outputProblems(schema: Record<string, unknown>, output: unknown, max = 5): OutputProblem[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = (ajv ??= makeUserSchemaAjv()).compile(schema);
    compiled.set(schema, validate);
  }
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
