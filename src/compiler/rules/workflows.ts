import { didYouMean } from '../diagnostics.js';
import { type Definition, taskPath } from '../model.js';
import type { Reporter } from '../source.js';

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
  for (const { definition, reporter } of files) {
    const hook = definition.on_failure?.start?.workflow;
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
