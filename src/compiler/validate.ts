import { checkDefinitionCel } from './cel/pass.js';
import { DEFAULT_COMPILE_LIMITS } from './compile-error.js';
import { countBySeverity, type Diagnostic, sortDiagnostics } from './diagnostics.js';
import { buildDefinition, type Definition } from './model.js';
import { definitionHash, type NormalizedDefinition, normalizeDefinition } from './normalize.js';
import { DEFAULT_LIMITS, type Limits, parseSource, type RawSource } from './parse.js';
import { checkDeps } from './rules/deps.js';
import { checkFlowControl } from './rules/flow-control.js';
import { checkInputsSchema } from './rules/inputs-schema.js';
import { checkScheduleInputs, checkSchedules } from './rules/schedules.js';
import { checkOwnFlows } from './rules/sensitive-flows.js';
import { checkFileName, checkTasks } from './rules/tasks.js';
import { checkTriggers } from './rules/triggers.js';
import { checkWaits } from './rules/waits.js';
import { checkWorkflowSet, type FileDefinition } from './rules/workflows.js';
import { checkSchema } from './schema-check.js';
import type { Reporter, SourceFile } from './source.js';

/** A definition that validated without errors: what `compile` and the runtime's registry take. */
export interface WorkflowDefinition {
  name: string;
  /** sha256 of the canonical JSON of the normalised definition: the version. */
  hash: string;
  file: string;
  normalized: NormalizedDefinition;
  /** The typed tree, kept so later passes (and diagnostics at compile time) can point into the file. */
  definition: Definition;
  source: SourceFile;
}

export interface ValidateOptions {
  /** File limits, and the most tasks a plan may have (a definition with more cannot start: refused here, early). */
  limits?: Partial<Limits> & { planTasks?: number };
  /** Workflow names registered elsewhere that `start` may name (the folder's own are always known). */
  knownWorkflows?: readonly string[];
  /**
   * Files found in a folder rather than named: one holding a YAML/JSON mapping with neither `name` nor `tasks`
   * (package.json, docker-compose.yml) is not a definition, and gets a warning saying it was skipped.
   */
  found?: ReadonlySet<string>;
  /** The project config's `kinds`: a task without its own `returns` takes its kind's. */
  kinds?: KindsConfig;
  /** The project config's `events`: the events triggers may name, with their payload schemas. */
  events?: EventsConfig;
}

/** Per event name, its payload's JSON Schema (the project config's `events:`). */
export type EventsConfig = Readonly<Record<string, { schema?: Record<string, unknown> }>>;

/** Per handler kind, what every task of the kind shares (the project config's `kinds:`). */
export type KindsConfig = Readonly<Record<string, { returns?: Record<string, unknown>; max_output?: number | string }>>;

export interface ValidationResult {
  diagnostics: Diagnostic[];
  files: number;
  errors: number;
  warnings: number;
  /** The valid definitions, in input order. */
  definitions: WorkflowDefinition[];
  /** Every file checked, with the workflow name it declares (when it has one) and whether it is valid. */
  checked: { file: string; name?: string; valid: boolean }[];
}

/** Validates a set of files together (cross-file rules included) and reports every problem of every file. */
export function validate(sources: readonly RawSource[], options: ValidateOptions = {}): ValidationResult {
  const limits = { ...DEFAULT_LIMITS, planTasks: DEFAULT_COMPILE_LIMITS.planTasks, ...options.limits };
  const checked: { reporter: Reporter; definition?: Definition }[] = sources.map((raw) =>
    checkFile(raw, limits, options.found?.has(raw.path) ?? false, { kinds: options.kinds ?? {}, events: options.events ?? {} }),
  );
  const withDefinitions = checked.filter((c): c is FileDefinition => c.definition !== undefined);
  checkWorkflowSet(withDefinitions, options.knownWorkflows);
  const diagnostics = sortDiagnostics(checked.flatMap((c) => c.reporter.diagnostics));
  const definitions: WorkflowDefinition[] = [];
  for (const { reporter, definition } of checked) {
    if (!definition || reporter.errorCount > 0) continue;
    const normalized = normalizeDefinition(definition);
    definitions.push({ name: normalized.name, hash: definitionHash(normalized), file: reporter.file.path, normalized, definition, source: reporter.file });
  }
  const summary = checked.map(({ reporter, definition }) => ({
    file: reporter.file.path,
    name: definition?.name,
    valid: reporter.errorCount === 0 && definition !== undefined,
  }));
  return { diagnostics, files: sources.length, ...countBySeverity(diagnostics), definitions, checked: summary };
}

/** Passes 1-4 for one file: parse, schema, semantics, CEL. */
function checkFile(
  raw: RawSource,
  limits: Limits & { planTasks: number },
  found: boolean,
  config: { kinds: KindsConfig; events: EventsConfig },
): { reporter: Reporter; definition?: Definition } {
  const { reporter, value } = parseSource(raw, limits);
  // a duplicate key leaves a readable document (the later key stands): its other problems are found too
  if (reporter.diagnostics.some((d) => d.rule !== 'duplicate-key')) return { reporter };
  // counted before the passes that grow with it: a definition that can never start is said at once
  const count = staticTaskCount(value);
  if (count > limits.planTasks) {
    reporter.report(
      'for-each',
      `the definition has ${count.toLocaleString('en-US')} tasks (for_each lists included), over the plan limit ` +
        `of ${limits.planTasks.toLocaleString('en-US')} (limit plan_tasks): it could never start`,
      { path: ['tasks'], at: 'key' },
    );
    return { reporter };
  }
  if (found && isOtherDocument(value)) {
    reporter.report(
      'schema',
      'not a workflow definition (it has neither "name" nor "tasks"): skipped',
      { path: [] },
      'keep other YAML and JSON out of the definitions, or list them under "ignore" in braid.config.yaml',
    );
    reporter.diagnostics[reporter.diagnostics.length - 1].severity = 'warning';
    return { reporter };
  }
  checkSchema(value, reporter);
  const definition = buildDefinition(value);
  if (!definition) return { reporter };
  applyKinds(definition, config.kinds);
  applyEvents(definition, config.events);
  checkTasks(definition, reporter);
  checkFileName(definition, reporter);
  checkDeps(definition, reporter);
  checkWaits(definition, reporter);
  checkInputsSchema(definition, reporter);
  checkSchedules(definition, reporter);
  checkFlowControl(definition, reporter);
  checkTriggers(definition, reporter, Object.keys(config.events));
  checkDefinitionCel(definition, reporter);
  checkScheduleInputs(definition, reporter);
  checkOwnFlows(definition, reporter);
  return { reporter, definition };
}

/** A task without its own `returns` or `max_output` takes its kind's from the project config (checked where the config is read). */
function applyKinds(definition: Definition, kinds: KindsConfig): void {
  for (const task of definition.tasks) {
    const kind = task.kind !== undefined && !task.start && Object.hasOwn(kinds, task.kind) ? kinds[task.kind] : undefined;
    if (!kind) continue;
    if (task.returns === undefined && kind.returns !== undefined) Object.assign(task, { returns: kind.returns, returnsFrom: 'config' });
    if (task.max_output === undefined && kind.max_output !== undefined) task.max_output = kind.max_output;
  }
}

/** Each trigger takes its event's payload schema from the project config, where the config declares the event. */
function applyEvents(definition: Definition, events: EventsConfig): void {
  for (const t of definition.triggers) {
    if (t.event === undefined || !Object.hasOwn(events, t.event)) continue;
    t.declared = true;
    t.schema = events[t.event].schema;
  }
}

/** The tasks a definition declares, a for_each over a literal list counting as its items (a template's items are known only at start). */
function staticTaskCount(value: unknown): number {
  const tasks = typeof value === 'object' && value !== null ? (value as { tasks?: unknown }).tasks : undefined;
  if (typeof tasks !== 'object' || tasks === null || Array.isArray(tasks)) return 0;
  let n = 0;
  for (const t of Object.values(tasks)) {
    const forEach = typeof t === 'object' && t !== null ? (t as { for_each?: unknown }).for_each : undefined;
    n += Array.isArray(forEach) ? forEach.length : 1;
  }
  return n;
}

/** A mapping with content but neither `name` nor `tasks`: some other tool's file (an empty file or a list stays an error). */
function isOtherDocument(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length > 0 && !('name' in value) && !('tasks' in value);
}
