import type { ErrorObject } from 'ajv';
import type { Rule } from '../diagnostics.js';
import type { Definition } from '../model.js';
import { compileLinear } from '../regex.js';
import { parsePointer } from '../schema-check.js';
import { makeUserSchemaAjv } from '../schemas.js';
import type { Reporter } from '../source.js';

// made on the first definition with an inputs schema: most validations never load ajv
let meta: ReturnType<typeof makeUserSchemaAjv> | undefined;

/** The meta-schema reports one mistake several ways (anyOf branches); keep the most telling per place. */
function onePerPlace(errors: ErrorObject[]): ErrorObject[] {
  const rank = (e: ErrorObject) => (e.keyword === 'enum' ? 0 : e.keyword === 'anyOf' ? 3 : e.keyword === 'type' ? 2 : 1);
  const best = new Map<string, ErrorObject>();
  for (const e of errors) {
    const current = best.get(e.instancePath);
    if (!current || rank(e) < rank(current)) best.set(e.instancePath, e);
  }
  return [...best.values()];
}

/** The inputs block, and each task's `returns`, must itself be a valid JSON Schema (2020-12) that compiles. */
export function checkInputsSchema(def: Definition, reporter: Reporter): void {
  if (def.inputs !== undefined) checkUserSchema(def.inputs, ['inputs'], 'inputs', 'inputs-schema', reporter);
  for (const task of def.tasks) {
    if (task.returnsFrom !== 'task' || task.returns === undefined) continue;
    if (task.start) {
      reporter.report(
        'returns-schema',
        `task "${task.name}" starts workflows: its output is their ids, not a handler's`,
        { path: ['tasks', task.name, 'returns'], at: 'key' },
        'returns declares what a handler returns; remove it here',
      );
      continue;
    }
    checkUserSchema(task.returns, ['tasks', task.name, 'returns'], `returns of task "${task.name}"`, 'returns-schema', reporter);
  }
  for (const task of def.tasks) checkStreams(task, reporter);
}

/** A task's streams: each chunk's schema a valid JSON Schema, on a task with a handler to write them. */
function checkStreams(task: Definition['tasks'][number], reporter: Reporter): void {
  if (!task.streams) return;
  if (task.start) {
    reporter.report('stream-schema', `task "${task.name}" starts workflows: it has no handler to write streams`, {
      path: ['tasks', task.name, 'streams'],
      at: 'key',
    });
    return;
  }
  for (const [name, s] of Object.entries(task.streams))
    if (s.schema !== undefined)
      checkUserSchema(s.schema, ['tasks', task.name, 'streams', name, 'schema'], `the schema of stream "${name}"`, 'stream-schema', reporter);
}

/** One user-written JSON Schema checked against the meta-schema, then compiled. */
export function checkUserSchema(schema: unknown, at: (string | number)[], what: string, rule: Rule, reporter: Reporter): void {
  const metaAjv = (meta ??= makeUserSchemaAjv());
  let valid: boolean;
  try {
    valid = metaAjv.validateSchema(schema as object) as boolean;
  } catch (error) {
    // the meta-schema's own checks can throw on hostile values (a uniqueItems list whose objects have a
    // "toString" that is not a function)
    reporter.report(rule, `${what} is not a valid JSON Schema: checking it failed (${(error as Error).message})`, { path: at, at: 'key' });
    return;
  }
  if (!valid) {
    for (const error of onePerPlace(metaAjv.errors ?? [])) {
      const path = [...at, ...parsePointer(error.instancePath)];
      const detail = error.keyword === 'enum' ? `must be one of ${(error.params.allowedValues as unknown[]).join(', ')}` : error.message;
      reporter.report(rule, `${what} is not a valid JSON Schema: ${error.instancePath || '/'} ${detail}`, { path });
    }
    return;
  }
  for (const path of misannotated(schema))
    reporter.report(
      'sensitive-leak',
      `${what}: sensitive is true or false`,
      { path: [...at, ...path] },
      'sensitive: true marks a value braid stores encrypted',
    );
  const patterns = unusablePatterns(schema);
  for (const p of patterns) {
    reporter.report(rule, `${what}: ${p.message}`, { path: [...at, ...p.path], at: p.at }, PATTERN_HINT);
  }
  if (patterns.length > 0) return;
  try {
    metaAjv.compile(schema as object);
  } catch (error) {
    reporter.report(rule, `${what} is not a usable JSON Schema: ${(error as Error).message}`, { path: at, at: 'key' });
  } finally {
    metaAjv.removeSchema(schema as object);
  }
}

const PATTERN_HINT =
  'patterns run on a linear-time engine (RE2): backreferences and lookaround have no linear-time form; match the parts and check the rest in the handler';

/** Keywords whose values are data, not schemas: a "pattern" inside them is not one. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/** Every `pattern` and `patternProperties` key of a schema the linear-time engine cannot run, where it is. */
function unusablePatterns(schema: unknown): { path: (string | number)[]; message: string; at?: 'key' }[] {
  const found: { path: (string | number)[]; message: string; at?: 'key' }[] = [];
  const seen = new Set<unknown>();
  const walk = (node: unknown, path: (string | number)[]): void => {
    if (typeof node !== 'object' || node === null || seen.has(node) || path.length > 256) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const [i, item] of node.entries()) walk(item, [...path, i]);
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      if (DATA_KEYWORDS.has(key)) continue;
      if (key === 'pattern' && typeof value === 'string') {
        const why = patternProblem(value);
        if (why) found.push({ path: [...path, key], message: why });
      } else if (key === 'patternProperties' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
        for (const [pattern, sub] of Object.entries(value)) {
          const why = patternProblem(pattern);
          if (why) found.push({ path: [...path, key, pattern], message: why, at: 'key' });
          walk(sub, [...path, key, pattern]);
        }
        continue;
      }
      walk(value, [...path, key]);
    }
  };
  walk(schema, []);
  return found;
}

/** Every `sensitive` annotation of a schema that is not a boolean, where it is (data keywords' values are not schemas). */
function misannotated(schema: unknown, path: (string | number)[] = [], depth = 0): (string | number)[][] {
  if (typeof schema !== 'object' || schema === null || depth > 128) return [];
  if (Array.isArray(schema)) return schema.flatMap((item, i) => misannotated(item, [...path, i], depth + 1));
  return Object.entries(schema).flatMap(([key, value]) =>
    DATA_KEYWORDS.has(key) ? [] : key === 'sensitive' && typeof value !== 'boolean' ? [[...path, key]] : misannotated(value, [...path, key], depth + 1),
  );
}

function patternProblem(pattern: string): string | undefined {
  try {
    compileLinear(pattern);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
