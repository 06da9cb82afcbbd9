export { RULES, type Diagnostic, type Rule, type Severity } from './diagnostics.js';
export { validate, type ValidateOptions, type ValidationResult, type WorkflowDefinition } from './validate.js';
export { loadDefinitions, listDefinitionFiles, readSources, isDefinitionFile } from './load.js';
export { compile, CompileError, DEFAULT_COMPILE_LIMITS, type CompileLimits, type CompileOptions } from './instantiate.js';
export type { Plan, PlanTask, PlanWait, PlanWorkflow } from './plan.js';
export type { NormalizedDefinition, NormalizedTask } from './normalize.js';
export { DEFAULT_LIMITS, type Limits, type RawSource } from './parse.js';
export { parseDuration } from './duration.js';
export { canonicalJson } from './canonical-json.js';
