import type { ValidateFunction } from 'ajv';
import { callbackKey } from './callback-key.js';
import { baseContext } from './cel/context.js';
import { withCelBudget } from './cel/cost.js';
import { deferredPaths, isDeferredString } from './cel/deferred.js';
import { hasTemplate } from './cel/templates.js';
import { type CompileLimits, DEFAULT_COMPILE_LIMITS } from './compile-error.js';
import { FLOW_FAILED, resolveFlow } from './flow.js';
import { describe, FAILED, Problems } from './instantiate-problems.js';
import {
  definitionHash as definitionHashOf,
  type NormalizedDefinition,
  type NormalizedTask,
  type NormalizedTimer,
  type NormalizedWait,
  START_KIND,
} from './normalize.js';
import type { Plan, PlanTask, PlanTerm, PlanWait } from './plan.js';
import { isTimestamp } from './rules/tasks.js';
import { makeUserSchemaAjv } from './schemas.js';
import { topologicalOrder } from './topo.js';
import { ulid } from './ulid.js';
import type { WorkflowDefinition } from './validate.js';

export interface CompileOptions {
  /** The workflow id; a new ULID by default. */
  id?: string;
  /** The creation time everything relative is measured from; the current time by default. */
  now?: Date | string;
  limits?: Partial<CompileLimits>;
  /** The definition's hash when the caller has it (a registered version's): not worked out again. */
  hash?: string;
}

const KEY_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const inputValidators = new WeakMap<object, ValidateFunction>();

/**
 * Passes 5-6: inputs checked against the inputs schema (defaults applied), templates evaluated with their
 * types kept, for_each expanded, and the plan laid out in topological order. Deterministic: the same
 * definition, inputs, id and now give byte-identical JSON.
 */
export function compile(definition: WorkflowDefinition | NormalizedDefinition, inputs: unknown = {}, options: CompileOptions = {}): Plan {
  const limits = { ...DEFAULT_COMPILE_LIMITS, ...options.limits };
  return withCelBudget(limits.celCost, () => compileWithin(definition, inputs, options, limits));
}

function compileWithin(definition: WorkflowDefinition | NormalizedDefinition, inputs: unknown, options: CompileOptions, limits: CompileLimits): Plan {
  const normalized = 'normalized' in definition ? definition.normalized : definition;
  const source = 'source' in definition ? definition.source : undefined;
  const hash = 'hash' in definition ? definition.hash : options.hash;
  const problems = new Problems(source ?? { path: `<${normalized.name}>` });
  // a definition with more tasks than a plan may have is refused before any of them is worked on
  if (normalized.tasks.length > limits.planTasks) {
    problems.at(
      ['tasks'],
      `the definition has ${normalized.tasks.length.toLocaleString('en-US')} tasks, over the plan ` +
        `limit of ${limits.planTasks.toLocaleString('en-US')} (limit plan_tasks)`,
      'for-each',
    );
    problems.throwIfAny();
  }
  const now = resolveNow(options.now);
  const checkedInputs = checkInputs(normalized, inputs, problems);
  problems.throwIfAny();

  const context = baseContext(normalized, { id: options.id ?? ulid(now.getTime()), name: normalized.name, created_at: now, inputs: checkedInputs });
  const { workflow } = context;
  const expansions = new Map<string, string[]>();
  const tasks: PlanTask[] = [];
  for (const task of normalized.tasks) {
    const items = expand(task, context, problems, limits);
    if (items === undefined) {
      expansions.set(task.name, []);
      continue;
    }
    // checked before any expansion is made: a list too long fails fast, whatever its size
    if (tasks.length + items.length > limits.planTasks) {
      problems.at(
        ['tasks', task.name, ...(task.for_each !== undefined ? ['for_each'] : [])],
        `the plan would have over ${limits.planTasks.toLocaleString('en-US')} tasks (limit plan_tasks) at task "${task.name}"`,
        'for-each',
      );
      break;
    }
    const names: string[] = [];
    const seenKeys = new Map<string, number>();
    items.forEach((item, index) => {
      const itemContext = item === NO_ITEM ? context : { ...context, item: item.value, index: BigInt(index) };
      let key: string | null = null;
      if (item !== NO_ITEM && task.key !== undefined) {
        key = renderKey(task, itemContext, index, seenKeys, problems);
        if (key === null) return;
      }
      const name = item === NO_ITEM ? task.name : `${task.name}[${key ?? index}]`;
      const planTask = instantiateTask(task, name, item === NO_ITEM ? null : index, key, itemContext, now, problems, normalized.concurrency);
      if (planTask) {
        tasks.push(planTask);
        names.push(name);
      }
    });
    expansions.set(task.name, names);
  }
  problems.throwIfAny();
  for (const t of tasks) t.deps = t.deps.flatMap((dep) => expansions.get(dep) ?? []);

  return {
    format: 1,
    workflow: {
      id: workflow.id,
      name: normalized.name,
      definition: { name: normalized.name, hash: hash ?? definitionHashOf(normalized) },
      inputs: checkedInputs,
      output: normalized.output ?? null,
      ...(normalized.timeout_ms !== undefined ? { timeout_ms: normalized.timeout_ms } : {}),
      created_at: now.toISOString(),
    },
    tasks: topologicalOrder(tasks),
  };
}

const NO_ITEM = Symbol('no for_each');
type Item = typeof NO_ITEM | { value: unknown };

function resolveNow(now: Date | string | undefined): Date {
  const d = now === undefined ? new Date() : new Date(now);
  if (Number.isNaN(d.getTime())) throw new RangeError(`invalid "now": ${String(now)}`);
  return d;
}

/** A workflow's inputs checked against its inputs schema, defaults applied: as compile() checks them, a CompileError alike. */
export function instantiateInputs(def: NormalizedDefinition, inputs: unknown): unknown {
  const problems = new Problems({ path: `<${def.name}>` });
  const checked = checkInputs(def, inputs, problems);
  problems.throwIfAny();
  return checked;
}

function checkInputs(def: NormalizedDefinition, inputs: unknown, problems: Problems): unknown {
  const copy = inputs === undefined ? {} : structuredClone(inputs);
  if (def.inputs === undefined) return copy;
  let validate = inputValidators.get(def.inputs);
  if (!validate) {
    validate = makeUserSchemaAjvWithDefaults().compile(def.inputs);
    inputValidators.set(def.inputs, validate);
  }
  if (!validate(copy)) {
    for (const e of validate.errors ?? []) {
      const at = e.instancePath || '/';
      const detail = e.keyword === 'additionalProperties' ? `${e.message} "${String(e.params.additionalProperty)}"` : e.message;
      problems.inputs(`inputs ${at}: ${detail}`, e.instancePath);
    }
  }
  return copy;
}

let defaultsAjv: ReturnType<typeof makeUserSchemaAjv> | undefined;
function makeUserSchemaAjvWithDefaults(): ReturnType<typeof makeUserSchemaAjv> {
  defaultsAjv ??= makeUserSchemaAjv({ useDefaults: true });
  return defaultsAjv;
}

function expand(task: NormalizedTask, context: Record<string, unknown>, problems: Problems, limits: CompileLimits): Item[] | undefined {
  if (task.for_each === undefined) return [NO_ITEM];
  const value = problems.render(task.for_each, context, ['tasks', task.name, 'for_each']);
  if (value === FAILED) return undefined;
  if (!Array.isArray(value)) {
    problems.at(['tasks', task.name, 'for_each'], `for_each of task "${task.name}" yielded ${describe(value)}, not a list`, 'for-each');
    return undefined;
  }
  if (value.length > limits.forEachItems) {
    problems.at(
      ['tasks', task.name, 'for_each'],
      `for_each of task "${task.name}" yielded ${value.length.toLocaleString('en-US')} items, over the ` +
        `limit of ${limits.forEachItems.toLocaleString('en-US')} (limit for_each_items)`,
      'for-each',
    );
    return undefined;
  }
  return value.map((v) => ({ value: v }));
}

function renderKey(task: NormalizedTask, context: Record<string, unknown>, index: number, seen: Map<string, number>, problems: Problems): string | null {
  const path = ['tasks', task.name, 'key'];
  const value = problems.render(task.key, context, path);
  if (value === FAILED) return null;
  const key = typeof value === 'number' && Number.isInteger(value) ? String(value) : value;
  if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
    problems.at(path, `key of ${task.name}[${index}] is ${describe(value)}: keys match ^[A-Za-z0-9_.-]{1,64}$`);
    return null;
  }
  const first = seen.get(key);
  if (first !== undefined) {
    problems.at(path, `key "${key}" of task "${task.name}" is used by items ${first} and ${index}: keys must be unique`);
    return null;
  }
  seen.set(key, index);
  return key;
}

function instantiateTask(
  task: NormalizedTask,
  name: string,
  index: number | null,
  key: string | null,
  context: Record<string, unknown>,
  now: Date,
  problems: Problems,
  workflowConcurrency: NormalizedDefinition['concurrency'],
): PlanTask | undefined {
  const base = ['tasks', task.name];
  // templates reading deps wait for them: kept as written, rendered when the task becomes available
  const args = problems.render(task.args, context, [...base, 'args'], isDeferredString);
  const metadata = problems.render(task.metadata, context, [...base, 'metadata'], isDeferredString);
  const deferredAt = [...deferredPaths(task.args, ['args']), ...deferredPaths(task.metadata, ['metadata'])];
  const scheduledAt = resolveScheduledAt(task, context, now, problems);
  const wait = task.wait ? instantiateWait(task, name, task.wait, context, problems) : null;
  if (args === FAILED || metadata === FAILED || scheduledAt === FAILED || wait === FAILED) return undefined;
  const flow = resolveFlow(task.flow, workflowConcurrency, { ...context, args }, base, (path, message) => problems.at(path, message, 'flow-control'));
  if (flow === FLOW_FAILED) return undefined;
  return {
    name,
    template: task.name,
    index,
    key,
    kind: task.kind,
    description: task.description ?? null,
    args,
    deps: task.deps,
    queue: task.queue,
    priority: task.priority,
    max_attempts: task.max_attempts,
    timeout_ms: task.timeout_ms,
    scheduled_at: scheduledAt,
    retry: task.retry,
    ignore_cancelled_deps: task.ignore_cancelled_deps,
    ignore_discarded_deps: task.ignore_discarded_deps,
    ignore_deleted_deps: task.ignore_deleted_deps,
    ignore_skipped_deps: task.ignore_skipped_deps === true,
    when: task.when ?? null,
    wait,
    start: task.kind === START_KIND && task.start ? task.start : null,
    metadata,
    deferred: deferredAt.length === 0 ? null : { paths: deferredAt, ...(index !== null ? { item: context.item } : {}) },
    ...(flow ? { flow } : {}),
  };
}

function resolveScheduledAt(task: NormalizedTask, context: Record<string, unknown>, now: Date, problems: Problems): string | null | typeof FAILED {
  if (task.delay_ms !== undefined) return new Date(now.getTime() + task.delay_ms).toISOString();
  if (task.scheduled_at === undefined) return null;
  return resolveTime(task.scheduled_at, context, ['tasks', task.name, 'scheduled_at'], problems);
}

function resolveTime(value: string, context: Record<string, unknown>, path: (string | number)[], problems: Problems): string | typeof FAILED {
  const rendered = hasTemplate(value) ? problems.render(value, context, path) : value;
  if (rendered === FAILED) return FAILED;
  if (typeof rendered !== 'string' || !isTimestamp(rendered)) {
    problems.at(path, `yielded ${describe(rendered)}, not an RFC 3339 timestamp`);
    return FAILED;
  }
  return new Date(rendered).toISOString();
}

/** A callback term's recipients: as listed, or its template's list of 1 to 1,000 distinct non-empty strings. */
function resolveRecipients(
  value: unknown,
  context: Record<string, unknown>,
  path: (string | number)[],
  problems: Problems,
): string[] | undefined | typeof FAILED {
  if (value === undefined || Array.isArray(value)) return value as string[] | undefined;
  const rendered = problems.render(value, context, [...path, 'recipients']);
  if (rendered === FAILED) return FAILED;
  const ok = (r: unknown) => typeof r === 'string' && r.length > 0 && r.length <= 256;
  if (!Array.isArray(rendered) || rendered.length === 0 || rendered.length > 1000 || !rendered.every(ok) || new Set(rendered).size < rendered.length) {
    problems.at([...path, 'recipients'], `recipients yielded ${describe(rendered)}, not a list of 1 to 1000 distinct strings of 1 to 256 characters`);
    return FAILED;
  }
  return rendered as string[];
}

/** A signal term's count: a number as written, or its template over inputs, which must yield an int from 1 to 100,000. */
function resolveCount(value: number | string, context: Record<string, unknown>, path: (string | number)[], problems: Problems): number | typeof FAILED {
  if (typeof value === 'number') return value;
  const rendered = problems.render(value, context, path);
  if (rendered === FAILED) return FAILED;
  if (typeof rendered !== 'number' || !Number.isInteger(rendered) || rendered < 1 || rendered > 100_000) {
    problems.at(path, `count yielded ${describe(rendered)}, not an integer from 1 to 100000`);
    return FAILED;
  }
  return rendered;
}

function instantiateWait(
  task: NormalizedTask,
  name: string,
  wait: NormalizedWait,
  context: Record<string, unknown>,
  problems: Problems,
): PlanWait | typeof FAILED {
  let failed = false;
  const timer = (t: NormalizedTimer, path: (string | number)[]): NormalizedTimer => {
    if (t.anchor !== 'at') return t;
    const at = resolveTime(t.at, context, path, problems);
    if (at === FAILED) {
      failed = true;
      return t;
    }
    return { ...t, at };
  };
  const base = ['tasks', task.name, 'wait'];
  const terms = wait.terms.map((term): PlanTerm => {
    if (term.kind === 'timer') return { ...term, timer: timer(term.timer, [...base, 'terms', term.name, 'timer', 'at']) };
    if (term.kind !== 'signal') return term;
    const count = resolveCount(term.count, context, [...base, 'terms', term.name, 'count'], problems);
    const recipients = term.callback && resolveRecipients(term.callback.recipients, context, [...base, 'terms', term.name, 'callback'], problems);
    if (count === FAILED || recipients === FAILED) failed = true;
    if (!term.callback || recipients === FAILED) return { ...term, count: count === FAILED ? 1 : count };
    const links = recipients?.length ?? 1;
    if (term.callback.single_use && count !== FAILED && count > links) {
      problems.at(
        [...base, 'terms', term.name, 'count'],
        `count ${count} is more than the ${links} single-use link${links === 1 ? '' : 's'} of term "${term.name}"`,
      );
      failed = true;
    }
    // each expansion's links are its own
    const signal = name === task.name ? term.signal : callbackKey(name, term.name);
    const callback = { ...term.callback, ...(recipients ? { recipients } : {}) };
    return { ...term, signal, count: count === FAILED ? 1 : count, callback };
  });
  const timers = wait.timers.map((t) => timer(t, [...base, 'timers', t.name, 'at']));
  return failed ? FAILED : { expr: wait.expr, terms, signals: wait.signals, timers };
}
