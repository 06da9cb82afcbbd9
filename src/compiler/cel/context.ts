import type { NormalizedDefinition } from '../normalize.js';
import { inputsType, toCelValue } from './types.js';

/** A workflow as evaluation sees it: at instantiation (its plan) or at run time (its row). */
export interface ContextWorkflow {
  id: string;
  name: string;
  created_at: Date | string;
  inputs: unknown;
}

/**
 * The values of the variables every template context starts from (environments.ts declares their types):
 * `inputs`, typed by the definition's inputs schema, and `workflow`. Instantiation, start tasks, workflows
 * terms' ids and the output all build on it; callers add what their context adds (deps, tasks, item).
 */
export function baseContext(
  def: Pick<NormalizedDefinition, 'inputs'> | undefined,
  w: ContextWorkflow,
): { inputs: unknown; workflow: { id: string; name: string; created_at: Date } } {
  return { inputs: toCelValue(w.inputs, inputsType(def?.inputs)), workflow: { id: w.id, name: w.name, created_at: new Date(w.created_at) } };
}

/** `workflow` as generic wait terms read it: also its attempt and inputs. */
export function waitWorkflow(def: Pick<NormalizedDefinition, 'inputs'> | undefined, w: ContextWorkflow & { attempt: number }): Record<string, unknown> {
  const { inputs, workflow } = baseContext(def, w);
  return { ...workflow, attempt: BigInt(w.attempt), inputs };
}
