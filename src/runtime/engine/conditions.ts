/**
 * A task's condition (`when`), decided once its deps are final: the pure part. The context is what the
 * compiler's `when` context declares (cel/environments.ts): inputs, workflow, and deps["x"] as { state, output }
 * of direct deps (a list for a dep that expands with for_each).
 */
import { baseContext, type ContextWorkflow } from '../../compiler/cel/context.js';
import { evaluateRaw } from '../../compiler/cel/evaluate.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { conditionOutcome } from './decide.js';
import { tasksContext, type TaskResult } from './output.js';

export function conditionContext(
  def: NormalizedDefinition | undefined,
  w: ContextWorkflow,
  task: { deps: readonly string[] },
  depRows: readonly TaskResult[],
  expanded: readonly string[],
): Record<string, unknown> {
  return { ...baseContext(def, w), deps: tasksContext(depRows.filter((r) => task.deps.includes(r.name)), expanded) };
}

/** Evaluates a condition: run or skip, or the error that discards the task (a CEL error, a value not a bool). */
export function evaluateCondition(expr: string, context: Record<string, unknown>): { run: boolean } | { error: string } {
  try {
    return conditionOutcome(evaluateRaw(expr, context));
  } catch (error) {
    const summary = (error as { summary?: string }).summary ?? String((error as Error).message ?? error).split('\n')[0];
    return { error: `when: ${summary}` };
  }
}
