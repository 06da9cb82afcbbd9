import { baseContext } from '../../compiler/cel/context.js';
import { renderTemplates } from '../../compiler/cel/evaluate.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { type TaskResult, tasksContext } from '../core/scopes.js';

/** The workflow's output, evaluated once when it completes; a failing template is reported, not thrown. */
export function evaluateOutput(
  def: NormalizedDefinition,
  template: unknown,
  workflow: { id: string; name: string; created_at: Date; inputs: unknown },
  tasks: readonly TaskResult[],
): { output: unknown; error?: string } {
  if (template === null || template === undefined) return { output: null };
  try {
    const context = {
      ...baseContext(def, workflow),
      tasks: tasksContext(
        tasks,
        def.tasks.filter((t) => t.for_each !== undefined).map((t) => t.name),
        def,
      ),
    };
    return { output: renderTemplates(template, context) };
  } catch (error) {
    return { output: null, error: `output: ${(error as Error).message}` };
  }
}
