import { didYouMean } from '../diagnostics.js';
import { type Definition, taskPath } from '../model.js';
import type { Reporter } from '../source.js';
import { checkStartFlows } from './sensitive-flows.js';

export interface FileDefinition {
  definition: Definition;
  reporter: Reporter;
}

/**
 * Cross-file rules over a whole definitions folder: workflow names are unique, and `start` (a task's, or
 * on_failure's) names a workflow that exists (in the folder, or among those the caller says are registered already).
 */
export function checkWorkflowSet(files: readonly FileDefinition[], alsoKnown: readonly string[] = []): void {
  const firstFile = new Map<string, string>();
  for (const { definition, reporter } of files) {
    const name = definition.name;
    if (name === undefined) continue;
    const first = firstFile.get(name);
    if (first !== undefined) {
      reporter.report(
        'duplicate-workflow',
        `workflow "${name}" is also defined in ${first}`,
        { path: ['name'] },
        'workflow names must be unique across the definitions folder',
      );
    } else firstFile.set(name, reporter.file.path);
  }
  const known = [...new Set([...firstFile.keys(), ...alsoKnown])];
  const byName = new Map(files.flatMap(({ definition: d }) => (d.name === undefined ? [] : [[d.name, d] as const])));
  for (const { definition, reporter } of files) {
    checkHook(definition, byName, known, reporter);
    for (const task of definition.tasks) {
      const target = task.start?.workflow;
      const started = target === undefined ? undefined : byName.get(target);
      if (started) {
        checkStartInputs(task.start?.inputs ?? {}, started, reporter, taskPath(task, 'start', 'inputs'), `task "${task.name}"`);
        checkStartFlows(definition, started, task.start?.inputs ?? {}, taskPath(task, 'start', 'inputs'), reporter);
      }
      if (target === undefined || known.includes(target)) continue;
      const guess = didYouMean(target, known);
      reporter.report(
        'unknown-workflow',
        `task "${task.name}" starts unknown workflow "${target}"`,
        { path: taskPath(task, 'start', 'workflow') },
        guess ? `did you mean "${guess}"?` : 'start names a workflow defined in the definitions folder',
      );
    }
  }
}

/** on_failure's workflow exists and takes the inputs it writes; its grouping is whole (a window to group in). */
function checkHook(definition: Definition, byName: ReadonlyMap<string, Definition>, known: readonly string[], reporter: Reporter): void {
  const hook = definition.on_failure;
  if (!hook) return;
  if (hook.both)
    reporter.report('schema', 'on_failure: write the workflow to start either as on_failure.workflow or under on_failure.start, not both', {
      path: ['on_failure', 'start'],
      at: 'key',
    });
  if (!hook.start) reporter.report('schema', 'on_failure names the workflow to start: on_failure: { workflow: NAME }', { path: ['on_failure'], at: 'key' });
  if (hook.group_by !== undefined && hook.window === undefined)
    reporter.report('schema', 'on_failure: group_by groups the failures of a window: add window (e.g. window: 10m)', {
      path: ['on_failure', 'group_by'],
      at: 'key',
    });
  const name = hook.start?.workflow;
  const child = name === undefined ? undefined : byName.get(name);
  const inputsPath = [...hook.at, 'inputs'];
  if (child) {
    checkStartInputs(hook.start?.inputs ?? {}, child, reporter, inputsPath, 'on_failure');
    checkStartFlows(definition, child, hook.start?.inputs ?? {}, inputsPath, reporter);
  }
  if (name === undefined || known.includes(name)) return;
  const guess = didYouMean(name, known);
  reporter.report(
    'unknown-workflow',
    `on_failure starts unknown workflow "${name}"`,
    { path: [...hook.at, 'workflow'] },
    guess ? `did you mean "${guess}"?` : 'on_failure names a workflow defined in the definitions folder',
  );
}

/**
 * The inputs a start (a task's, or on_failure's) writes against the started workflow's inputs schema, as far as
 * they are known before it runs: every required input is written (or has a default), and none it does not
 * declare when it declares no others (additionalProperties: false). The values' shapes are checked at the start.
 */
function checkStartInputs(inputs: Record<string, unknown>, child: Definition, reporter: Reporter, path: (string | number)[], who: string): void {
  const schema = child.inputs ?? {};
  const props = (typeof schema.properties === 'object' && schema.properties !== null ? schema.properties : {}) as Record<string, { default?: unknown }>;
  const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [];
  const missing = required.filter((r) => !(r in inputs) && props[r]?.default === undefined);
  if (missing.length > 0)
    reporter.report(
      'invalid-inputs',
      `${who} starts "${child.name}" without its required input${missing.length > 1 ? 's' : ''} ${missing.map((m) => `"${m}"`).join(', ')}`,
      { path, at: 'key' },
      `add ${missing[0]}: under ${path.join('.')}`,
    );
  if (schema.additionalProperties !== false) return;
  for (const key of Object.keys(inputs).filter((k) => !(k in props))) {
    const guess = didYouMean(key, Object.keys(props));
    reporter.report(
      'invalid-inputs',
      `"${child.name}" declares no input "${key}"`,
      { path: [...path, key], at: 'key' },
      guess ? `did you mean "${guess}"?` : undefined,
    );
  }
}
