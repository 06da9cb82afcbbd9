import { didYouMean } from '../diagnostics.js';
import { type Definition, taskPath } from '../model.js';
import type { Reporter } from '../source.js';

/** deps name existing tasks, never the task itself, and never form a cycle (the cycle is printed). */
export function checkDeps(def: Definition, reporter: Reporter): void {
  const names = def.tasks.map((t) => t.name);
  const known = new Set(names);
  for (const task of def.tasks) {
    task.deps.forEach((dep, i) => {
      if (dep === task.name) {
        reporter.report('self-dep', `task "${task.name}" depends on itself`, { path: taskPath(task, 'deps', i) });
      } else if (!known.has(dep)) {
        const guess = didYouMean(dep, names);
        reporter.report(
          'unknown-dep',
          `task "${task.name}" depends on unknown task "${dep}"`,
          { path: taskPath(task, 'deps', i) },
          guess ? `did you mean "${guess}"?` : undefined,
        );
      }
    });
  }
  for (const cycle of findCycles(def)) {
    const [first] = cycle;
    const task = def.tasks.find((t) => t.name === first)!;
    const next = cycle[1];
    reporter.report('cycle', `dependency cycle: ${[...cycle, first].join(' -> ')} (each task depends on the next)`, {
      path: taskPath(task, 'deps', task.deps.indexOf(next)),
    });
  }
}

/** Each cycle once, reported from its first task in declaration order; iterative so deep chains are safe. */
function findCycles(def: Definition): string[][] {
  const deps = new Map(def.tasks.map((t) => [t.name, t.deps.filter((d) => d !== t.name)]));
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[][] = [];
  for (const root of def.tasks.map((t) => t.name)) {
    if (state.has(root)) continue;
    const path: string[] = [];
    const stack: { name: string; next: number }[] = [{ name: root, next: 0 }];
    state.set(root, 'open');
    path.push(root);
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const children = deps.get(top.name) ?? [];
      if (top.next >= children.length) {
        state.set(top.name, 'done');
        stack.pop();
        path.pop();
        continue;
      }
      const child = children[top.next++];
      if (!deps.has(child)) continue;
      const s = state.get(child);
      if (s === 'open') {
        cycles.push(path.slice(path.indexOf(child)));
      } else if (s === undefined) {
        state.set(child, 'open');
        path.push(child);
        stack.push({ name: child, next: 0 });
      }
    }
  }
  return cycles;
}
