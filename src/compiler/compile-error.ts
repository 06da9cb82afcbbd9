import type { Diagnostic } from './diagnostics.js';

/**
 * What one compile may grow to, and the error it throws: apart from the compiler itself, so the runtime and the
 * CLI can name both without loading the compiler (ajv, YAML positions, the CEL checker) until they compile.
 */
export interface CompileLimits {
  /** Items of one for_each. */
  forEachItems: number;
  /** Tasks of the whole plan. */
  planTasks: number;
  /** CEL comprehension steps, shared by all the templates of one compile. */
  celCost: number;
}

export const DEFAULT_CEL_COST = 1_000_000;

export const DEFAULT_COMPILE_LIMITS: CompileLimits = { forEachItems: 10_000, planTasks: 100_000, celCost: DEFAULT_CEL_COST };

/** Compilation failed: the inputs do not fit the definition. Carries one diagnostic per problem. */
export class CompileError extends Error {
  readonly code = 'inputs_invalid' as const;
  constructor(readonly diagnostics: Diagnostic[]) {
    super(diagnostics.map((d) => `${d.file}:${d.line}:${d.column}: ${d.message} [${d.rule}]`).join('\n'));
    this.name = 'CompileError';
  }
}
