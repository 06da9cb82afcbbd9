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
    const hook = definition.on_failure?.start?.workflow;
    const child = hook === undefined ? undefined : byName.get(hook);
    if (child) {
      checkStartInputs(definition.on_failure!.start!.inputs ?? {}, child, reporter, ['on_failure', 'start', 'inputs'], 'on_failure');
      checkStartFlows(definition, child, definition.on_failure!.start!.inputs ?? {}, ['on_failure', 'start', 'inputs'], reporter);
    }
    if (hook !== undefined && !known.includes(hook)) {
      const guess = didYouMean(hook, known);
      reporter.report(
        'unknown-workflow',
        `on_failure starts unknown workflow "${hook}"`,
        { path: ['on_failure', 'start', 'workflow'] },
        guess ? `did you mean "${guess}"?` : 'on_failure.start names a workflow defined in the definitions folder',
      );
    }
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
