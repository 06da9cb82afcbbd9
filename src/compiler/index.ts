export { canonicalJson } from './canonical-json.js';
export { type Diagnostic, RULES, type Rule, type Severity } from './diagnostics.js';
export { parseDuration } from './duration.js';
export { CompileError, type CompileLimits, type CompileOptions, compile, DEFAULT_COMPILE_LIMITS } from './instantiate.js';
export { isDefinitionFile, listDefinitionFiles, loadDefinitions, readSources } from './load.js';
export type { NormalizedDefinition, NormalizedTask } from './normalize.js';
export { DEFAULT_LIMITS, type Limits, type RawSource } from './parse.js';
export type { Plan, PlanTask, PlanWait, PlanWorkflow } from './plan.js';
export { type ValidateOptions, type ValidationResult, validate, type WorkflowDefinition } from './validate.js';
