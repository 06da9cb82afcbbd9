import { Environment } from '@marcbachmann/cel-js';
import type { CelType } from './types.js';

/**
 * Each templated field is evaluated at one moment with one set of names (SPEC: "Templates"). A context
 * names that moment; its variables are declared once per definition, typed from the inputs schema.
 */
export type CelContext =
  | 'template' // args, metadata, scheduled_at, timer at, for_each, key: at start
  | 'template_item' // the same inside a for_each task: adds item, index
  | 'args' // args, metadata: at start, or (a template reading deps) when the task becomes available
  | 'args_item' // the same inside a for_each task
  | 'start' // start.for_each, start.inputs: when the start task runs
  | 'start_item' // start.inputs under start.for_each
  | 'ids' // workflows.ids: when the wait becomes active
  | 'when' // a task's condition: once every dep is final
  | 'output' // workflow output: at completion
  | 'generic' // generic wait term expr
  | 'where' // signal term predicate, over one signal row
  | 'expr' // wait.expr: term names only
  | 'schedule' // a schedule's inputs: at each tick
  | 'flow' // a task's flow-control key, limit, weight: when the task is added
  | 'flow_item' // the same inside a for_each task
  | 'flow_workflow' // the workflow's concurrency, fairness, rate limit: at start
  | 'debounce' // the workflow's debounce key: at each start, before the run exists
  | 'on_failure' // on_failure's inputs: when the run fails, or when its group's window ends
  | 'on_failure_group' // on_failure.group_by: when the run fails
  | 'trigger'; // a trigger's where, id and inputs: when its event is emitted

export const TIMESTAMP = 'google.protobuf.Timestamp';

/** Names whose keys are checked against what the definition declares (deps, tasks, signals, timers, workflows terms). */
export type RefKind = 'deps' | 'tasks' | 'signals' | 'timers' | 'workflows';

export const CONTEXT_REFS: Record<CelContext, readonly RefKind[]> = {
  template: [],
  template_item: [],
  args: ['deps'],
  args_item: ['deps'],
  start: ['deps'],
  start_item: ['deps'],
  ids: ['deps'],
  when: ['deps'],
  output: ['tasks'],
  generic: ['deps', 'signals', 'timers', 'workflows'],
  where: [],
  expr: [],
  schedule: [],
  flow: [],
  flow_item: [],
  flow_workflow: [],
  debounce: [],
  on_failure: [],
  on_failure_group: [],
  trigger: [],
};

export function contextVariables(context: CelContext, inputs: CelType): Record<string, CelType> {
  const workflowAtStart: CelType = { id: 'string', name: 'string', created_at: TIMESTAMP };
  const base = { inputs, workflow: workflowAtStart };
  const withItem = { item: 'dyn', index: 'int' };
  const deps = { deps: 'map<string, dyn>' };
  switch (context) {
    case 'template':
      return base;
    case 'template_item':
      return { ...base, ...withItem };
    case 'args':
      return { ...base, ...deps };
    case 'args_item':
      return { ...base, ...deps, ...withItem };
    case 'start':
    case 'ids':
    case 'when':
      return { ...base, ...deps };
    case 'start_item':
      return { ...base, ...deps, ...withItem };
    case 'output':
      return { ...base, tasks: 'map<string, dyn>' };
    case 'generic':
      return {
        inputs,
        ...deps,
        signals: 'map<string, list<dyn>>',
        timers: 'map<string, dyn>',
        workflows: 'map<string, dyn>',
        workflow: { id: 'string', name: 'string', attempt: 'int', inputs, created_at: TIMESTAMP },
      };
    case 'where':
      return { inputs, payload: 'dyn', source: 'dyn', key: 'string', id: 'int', attempt: 'int', created_at: TIMESTAMP };
    case 'expr':
      return {};
    case 'schedule':
      return { schedule: { name: 'string', time: TIMESTAMP } };
    case 'flow':
      return { ...base, args: 'map<string, dyn>' };
    case 'flow_item':
      return { ...base, args: 'map<string, dyn>', ...withItem };
    case 'flow_workflow':
      return base;
    case 'debounce':
      return { inputs };
    case 'on_failure':
      return { ...base, workflow: { ...workflowAtStart, attempt: 'int' }, failed: FAILED_HOOK };
    case 'on_failure_group':
      return { ...base, workflow: { ...workflowAtStart, attempt: 'int' }, failed: FAILED };
    case 'trigger':
      // event's payload is typed by its schema: the pass gives `event` itself
      return {};
  }
}

/**
 * What a failed run's on_failure reads of it: its id and name, its error, the task that failed, the attempt (its
 * inputs also the failures the run stands for, `count`, and their group's key, `group`).
 */
export const FAILED = { id: 'string', name: 'string', error: 'string', task: 'string', attempt: 'int' } satisfies CelType;
const FAILED_HOOK: CelType = { ...FAILED, count: 'int', group: 'string' };

// optional types: `inputs.?customer.?email.orValue("")` is one of the guards rule cel-optional accepts
const OPTIONS = { homogeneousAggregateLiterals: false, enableOptionalTypes: true } as const;

function declare(env: Environment, name: string, type: CelType): void {
  if (typeof type === 'string') env.registerVariable(name, type);
  else env.registerVariable({ name, schema: type });
}

/** A type-checking environment for one context of one definition (typed inputs). */
export function checkEnvironment(context: CelContext, inputs: CelType, extra: Record<string, CelType> = {}): Environment {
  const env = new Environment(OPTIONS);
  for (const [name, type] of Object.entries({ ...contextVariables(context, inputs), ...extra })) declare(env, name, type);
  return env;
}

let evalEnv: Environment | undefined;

/**
 * The evaluation environment: every variable dyn, so plain JSON (and BigInt ints) can be passed in. An
 * expression is only evaluated after it type-checked in its context, so the types already hold.
 */
export function evaluationEnvironment(): Environment {
  if (!evalEnv) {
    evalEnv = new Environment({ ...OPTIONS, unlistedVariablesAreDyn: true });
  }
  return evalEnv;
}
