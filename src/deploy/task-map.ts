import type { NormalizedDefinition, NormalizedTask } from '../compiler/normalize.js';

/**
 * Which task of one version a task of another becomes: the task of the same name, or the one whose
 * `renamed_from` names it. Keyed by the older version's task names; a name missing from the map was removed.
 */
export function taskCorrespondence(from: NormalizedDefinition, to: NormalizedDefinition): Map<string, NormalizedTask> {
  const toByName = new Map(to.tasks.map((t) => [t.name, t]));
  const toByOldName = new Map(to.tasks.filter((t) => t.renamed_from !== undefined).map((t) => [t.renamed_from!, t]));
  const out = new Map<string, NormalizedTask>();
  for (const t of from.tasks) {
    const next = toByName.get(t.name) ?? toByOldName.get(t.name);
    if (next) out.set(t.name, next);
  }
  return out;
}

/** The name a task (or for_each expansion, `name[key]`) of the older version has in the newer one, if it has one. */
export function renamedTo(template: string, name: string, correspondence: ReadonlyMap<string, NormalizedTask>): string | undefined {
  const next = correspondence.get(template);
  return next === undefined ? undefined : next.name + name.slice(template.length);
}
