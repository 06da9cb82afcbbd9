import { hasTemplate } from './cel/templates.js';
import type { NormalizedDefinition } from './normalize.js';

const known = new WeakMap<NormalizedDefinition, boolean>();

/**
 * Whether every plan of the definition has the same tasks whatever its inputs and id, so a batch start can
 * compile one row and stamp its task rows for the others (only the workflow's id and inputs differ). True when
 * nothing a task holds is rendered at instantiation: no template anywhere in its tasks (for_each, keys, args,
 * metadata, schedules, counts, recipients) and no flow control (its keys are expressions over the inputs).
 */
export function stampable(def: NormalizedDefinition): boolean {
  let answer = known.get(def);
  if (answer === undefined) {
    answer = def.concurrency === undefined && def.tasks.every((t) => t.flow === undefined && !holdsTemplate(t, 0));
    known.set(def, answer);
  }
  return answer;
}

/** A definition nests a few levels; past this depth it is taken as templated (the answer stays safe). */
const MAX_DEPTH = 64;

function holdsTemplate(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return hasTemplate(value);
  if (value === null || typeof value !== 'object') return false;
  if (depth > MAX_DEPTH) return true;
  const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
  return children.some((v) => holdsTemplate(v, depth + 1));
}
