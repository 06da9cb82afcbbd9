import type { ErrorObject } from 'ajv';
import { didYouMean, type Rule } from './diagnostics.js';
import { loadJsonSchema, workflowSchemaValidator } from './schemas.js';
import type { Reporter } from './source.js';

interface SchemaNode {
  pattern?: string;
  properties?: Record<string, unknown>;
  anyOf?: { type?: string; minimum?: number; maximum?: number }[];
}

/** The flow controls: a count of theirs out of range is their rule's problem, not the file format's. */
const FLOW_CONTROL_KEYS = new Set(['concurrency', 'fairness', 'rate_limit']);

const defs = loadJsonSchema('workflow').$defs as Record<string, SchemaNode>;
const NAME_PATTERNS = new Set([defs.name.pattern, defs.key.pattern]);
const MAX_NAME = (defs.name as { maxLength?: number }).maxLength ?? 64;
const DURATION_PATTERN = defs.duration.pattern;

/** Pass 2: the definition against workflow.schema.json; each ajv error becomes one diagnostic at its node. */
export function checkSchema(value: unknown, reporter: Reporter): void {
  if (value === null || value === undefined) {
    reporter.report('schema', 'the file is empty: a definition needs at least "name" and "tasks"', { path: [] });
    return;
  }
  const validate = workflowSchemaValidator();
  if (validateSafely(validate, value)) return;
  const errors = validate.errors ?? [];
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const error of errors) {
    if (error.keyword === 'if') continue;
    if (anyOfPaths.has(error.instancePath) && error.keyword !== 'anyOf') continue;
    if (fromPropertyNames(error, value)) continue;
    const path = parsePointer(error.instancePath);
    const { rule, message, at, target, hint } = describe(error, path);
    reporter.report(rule, message, { path: target ?? path, at }, hint);
  }
}

/**
 * The schema's check of distinct list items compares objects with their own toString or valueOf (fast-deep-equal
 * calls them): a list item `{ toString: {} }` made it throw. Such items are checked again with those keys renamed, so they
 * are reported as what they are (not a string) at their own place.
 */
function validateSafely(validate: ReturnType<typeof workflowSchemaValidator>, value: unknown): boolean {
  try {
    return validate(value) as boolean;
  } catch {
    return validate(withoutOwnConversions(value)) as boolean;
  }
}

function withoutOwnConversions(value: unknown, inList = false): unknown {
  if (Array.isArray(value)) return value.map((v) => withoutOwnConversions(v, true));
  if (value === null || typeof value !== 'object') return value;
  // renamed, not dropped: two items that differ stay different
  const renamed = (k: string) => (inList && (k === 'toString' || k === 'valueOf') ? `_${k}` : k);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [renamed(k), withoutOwnConversions(v)]));
}

interface Described {
  rule: Rule;
  message: string;
  at?: 'key' | 'value';
  target?: (string | number)[];
  hint?: string;
}

function describe(error: ErrorObject, path: (string | number)[]): Described {
  const where = describePath(path);
  const parent = (error.parentSchema ?? {}) as SchemaNode;
  switch (error.keyword) {
    case 'additionalProperties': {
      const key = String(error.params.additionalProperty);
      const known = Object.keys(parent.properties ?? {});
      const guess = didYouMean(key, known);
      return {
        rule: 'unknown-key',
        message: `${where}: unknown key "${key}"`,
        target: [...path, key],
        at: 'key',
        hint: guess ? `did you mean "${guess}"?` : `allowed keys: ${known.join(', ')}`,
      };
    }
    case 'propertyNames': {
      const name = String(error.params.propertyName);
      const why = /^[a-z][a-z0-9_]*$/.test(name) ? `longer than ${MAX_NAME} characters` : 'names match ^[a-z][a-z0-9_]*$';
      return { rule: 'invalid-name', message: `${where}: invalid name "${name}": ${why}`, target: [...path, name], at: 'key' };
    }
    case 'required': {
      const missing = String(error.params.missingProperty);
      const hint = missing === 'kind' ? 'a task needs "kind" (the handler to run) or "start" (child workflows)' : undefined;
      return { rule: 'schema', message: `${where}: missing required key "${missing}"`, at: path.length > 0 ? 'key' : 'value', hint };
    }
    case 'pattern':
    case 'maxLength':
      if (parent.pattern !== undefined && NAME_PATTERNS.has(parent.pattern)) {
        const why = error.keyword === 'maxLength' ? `longer than ${error.params.limit} characters` : `must match ${parent.pattern}`;
        return { rule: 'invalid-name', message: `${where}: invalid name ${JSON.stringify(error.data)}: ${why}` };
      }
      if (parent.pattern === DURATION_PATTERN) {
        return {
          rule: 'invalid-duration',
          message: `${where}: invalid duration ${JSON.stringify(error.data)}`,
          hint: 'durations look like 250ms, 30s, 15m, 2h, 7d, 1h30m or ISO 8601 PT30M',
        };
      }
      return { rule: 'schema', message: `${where}: ${error.message}` };
    case 'type': {
      const isDuration = (error.parentSchema as SchemaNode | undefined)?.pattern === DURATION_PATTERN;
      return {
        rule: isDuration ? 'invalid-duration' : 'schema',
        message: `${where}: must be ${article(String(error.params.type))}, not ${typeName(error.data)}`,
        hint: isDuration ? 'durations are strings such as "30s" or "15m"' : undefined,
      };
    }
    case 'enum':
      return { rule: 'schema', message: `${where}: must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    case 'minimum':
    case 'maximum':
      return outOfRange(where, path, error.data, (parent as { minimum?: number }).minimum, (parent as { maximum?: number }).maximum);
    case 'anyOf': {
      const last = path[path.length - 1];
      const range = typeof error.data === 'number' ? parent.anyOf?.find((b) => b.type === 'integer' && (b.minimum ?? b.maximum) !== undefined) : undefined;
      if (range && typeof error.data === 'number') return outOfRange(where, path, error.data, range.minimum, range.maximum);
      if (last === 'for_each') return { rule: 'for-each', message: `${where}: must be a list or a single \${{ }} template that yields one` };
      if (last === 'ids') return { rule: 'schema', message: `${where}: must be a list of workflow ids or a single \${{ }} template that yields one` };
      return { rule: 'schema', message: `${where}: ${error.message}` };
    }
    case 'minProperties':
    case 'maxProperties':
      if (path.includes('timer') || path[path.length - 2] === 'timers') {
        return { rule: 'wait-shape', message: `${where}: a timer takes exactly one of at, after_workflow_created, after_wait_started, after_task_finalized` };
      }
      return { rule: 'schema', message: `${where}: must not be empty` };
    case 'uniqueItems':
      return {
        rule: 'schema',
        message: `${where}: duplicate item ${JSON.stringify((error.data as unknown[])[error.params.i as number])}`,
        target: [...path, error.params.i as number],
      };
    default:
      return { rule: 'schema', message: `${where}: ${error.message ?? 'invalid'}` };
  }
}

/** A number outside its range: the range, and what was given (a zero count is a pause in disguise). */
function outOfRange(where: string, path: readonly (string | number)[], value: unknown, min: number | undefined, max: number | undefined): Described {
  const bounds =
    min !== undefined && max !== undefined
      ? `from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}`
      : min !== undefined
        ? `at least ${min.toLocaleString('en-US')}`
        : `at most ${(max ?? 0).toLocaleString('en-US')}`;
  const flow = path.some((p) => typeof p === 'string' && FLOW_CONTROL_KEYS.has(p));
  return {
    rule: flow ? 'flow-control' : 'schema',
    message: `${where}: must be ${Number.isInteger(value) ? '' : 'an integer '}${bounds}, got ${JSON.stringify(value)}`,
    hint: flow && value === 0 ? 'to stop a task from running, pause what starts it' : undefined,
  };
}

/** propertyNames runs the name schema on each key: its inner error (on the object) duplicates the outer one. */
function fromPropertyNames(error: ErrorObject, root: unknown): boolean {
  if (error.keyword !== 'pattern' && error.keyword !== 'maxLength') return false;
  let node: unknown = root;
  for (const seg of parsePointer(error.instancePath)) node = (node as Record<string, unknown> | undefined)?.[seg];
  return typeof node === 'object' && node !== null;
}

export function parsePointer(p: string): (string | number)[] {
  if (p === '') return [];
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^(0|[1-9][0-9]*)$/.test(s) ? Number(s) : s));
}

/** A readable location: `task "charge": wait.terms.fraud_ok` rather than a raw pointer. */
export function describePath(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'definition';
  if (path[0] === 'tasks' && path.length >= 2) {
    const rest = path.slice(2);
    return `task "${path[1]}"${rest.length > 0 ? `: ${joinPath(rest)}` : ''}`;
  }
  return joinPath(path);
}

function joinPath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

function article(type: string): string {
  const word = type === 'object' ? 'mapping' : type === 'array' ? 'list' : type;
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a number';
  return `a ${typeof v}`;
}
