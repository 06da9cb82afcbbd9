/**
 * A search by an input's value where the input is sensitive: the stored value is sealed (a different envelope
 * each time), so the search could only find nothing. Refused instead, naming the workflow that marks it.
 */
import type { Queryable } from '../db/types.js';
import { currentDefinition, currentDefinitions } from '../sql/definitions.js';
import { OperationInvalidError } from './actor.js';
import { sensitivePathsOf } from './sensitive.js';

export async function checkInputSearch(q: Queryable, s: string, filter: { name?: string; inputs?: readonly { path: string }[] }): Promise<void> {
  if (!filter.inputs?.length) return;
  const defs = filter.name ? [await currentDefinition(q, s, filter.name)].flatMap((d) => (d ? [d] : [])) : await currentDefinitions(q, s);
  for (const def of defs) {
    const marked = sensitivePathsOf(def.normalized.inputs);
    for (const { path } of filter.inputs) {
      const steps = path.split('.');
      // the search reads a sensitive value, or a value inside one
      const hit = marked.find((m) => m.length <= steps.length && m.every((step, i) => step === '*' || step === steps[i]));
      if (hit)
        throw new OperationInvalidError(
          `--input ${path}: inputs.${hit.join('.')} is sensitive in workflow "${def.name}", so it is stored encrypted and a search by its value cannot match`,
        );
    }
  }
}
