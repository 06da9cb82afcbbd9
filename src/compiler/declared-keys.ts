import type { NormalizedWait } from './normalize.js';
import type { PlanWait } from './plan.js';

/**
 * Signal keys a wait declares: those of its signal terms (and the keys they were renamed from) and of
 * `wait.signals`. Emits of other keys never touch it.
 */
export function declaredKeys(wait: PlanWait | NormalizedWait): string[] {
  const keys = new Set(wait.signals);
  for (const t of wait.terms) if (t.kind === 'signal') for (const k of termKeys(t)) keys.add(k);
  return [...keys].sort();
}

/** The keys whose signals count for a signal term: its own, and the one it was renamed from. */
export function termKeys(term: { signal: string; renamed_from?: string }): string[] {
  return term.renamed_from !== undefined && term.renamed_from !== term.signal ? [term.signal, term.renamed_from] : [term.signal];
}
