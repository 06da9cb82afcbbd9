import { didYouMean } from '../diagnostics.js';
import type { Definition } from '../model.js';
import type { Reporter } from '../source.js';

/** Each trigger names an event the project config declares (its payload schema is what `where`, `id` and inputs read). */
export function checkTriggers(def: Definition, reporter: Reporter, declared: readonly string[]): void {
  for (const t of def.triggers) {
    if (t.event === undefined || t.declared) continue;
    const guess = didYouMean(t.event, declared);
    reporter.report(
      'unknown-event',
      `trigger ${t.index + 1}: event "${t.event}" is not declared in the project config`,
      { path: ['triggers', t.index, 'event'] },
      guess ? `did you mean "${guess}"?` : `declare it in braid.config.yaml: events: { ${t.event}: { schema: {...} } }`,
    );
  }
}
