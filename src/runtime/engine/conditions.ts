/**
 * A task's condition (`when`), decided once its deps are final: the pure part. Its context is output.ts's
 * depsScope, what the compiler's `when` context declares (cel/environments.ts).
 */
import { evaluateRaw } from '../../compiler/cel/evaluate.js';
import { conditionOutcome } from './decide.js';

/** Evaluates a condition: run or skip, or the error that discards the task (a CEL error, a value not a bool). */
export function evaluateCondition(expr: string, context: Record<string, unknown>): { run: boolean } | { error: string } {
  try {
    return conditionOutcome(evaluateRaw(expr, context));
  } catch (error) {
    const summary = (error as { summary?: string }).summary ?? String((error as Error).message ?? error).split('\n')[0];
    return { error: `when: ${summary}` };
  }
}
