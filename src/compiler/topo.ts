import type { PlanTask } from './plan.js';

/**
 * Kahn's algorithm with ties broken by declaration order (the order tasks arrive in): a ready task with the
 * lowest arrival position always goes first, kept in a binary heap so 10,000 tasks stay fast.
 */
export function topologicalOrder(tasks: PlanTask[]): PlanTask[] {
  const position = new Map(tasks.map((t, i) => [t.name, i]));
  const dependents = new Map<string, number[]>();
  const waiting = tasks.map((t) => t.deps.length);
  tasks.forEach((t, i) => {
    for (const dep of t.deps) {
      const list = dependents.get(dep);
      if (list) list.push(i);
      else dependents.set(dep, [i]);
    }
  });
  const heap = new MinHeap();
  for (const [i, n] of waiting.entries()) if (n === 0) heap.push(i);
  const out: PlanTask[] = [];
  while (heap.size > 0) {
    const i = heap.pop();
    out.push(tasks[i]);
    for (const d of dependents.get(tasks[i].name) ?? []) if (--waiting[d] === 0) heap.push(d);
  }
  if (out.length !== tasks.length) {
    // The validator rejects cycles, so this only happens on a definition that bypassed it.
    const stuck = tasks.filter((_, i) => waiting[i] > 0 && position.has(tasks[i].name)).map((t) => t.name);
    throw new Error(`dependency cycle among: ${stuck.join(', ')}`);
  }
  return out;
}

class MinHeap {
  private readonly items: number[] = [];
  get size(): number {
    return this.items.length;
  }
  push(v: number): void {
    const a = this.items;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p] <= a[i]) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): number {
    const a = this.items;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l] < a[m]) m = l;
        if (r < a.length && a[r] < a[m]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}
