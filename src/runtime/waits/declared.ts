import type { NormalizedWait } from '../../compiler/normalize.js';
import type { PlanWait } from '../../compiler/plan.js';

/** Signal keys a wait declares: those of its signal terms and of `wait.signals`. Emits of other keys never touch it. */
export function declaredKeys(wait: PlanWait | NormalizedWait): string[] {
  const keys = new Set(wait.signals);
  for (const t of wait.terms) if (t.kind === 'signal') keys.add(t.signal);
  return [...keys].sort();
}
