/**
 * Wait coverage (`braid test --coverage`): per workflow, over every test that ran it (as the workflow under test
 * or as a child), which tasks ran, which were skipped, which never ran, and for each wait which terms were ever
 * true, so a team sees the branch nobody tested.
 */
import type { NormalizedDefinition } from '../compiler/normalize.js';
import { templateOf } from './mocks.js';
import type { TestResult } from './run-test.js';

export interface Coverage {
  workflow: string;
  tests: number;
  tasks: string[];
  ran: string[];
  skipped: string[];
  neverRan: string[];
  waits: { task: string; terms: { name: string; everTrue: boolean }[] }[];
}

export function coverageOf(results: readonly TestResult[], definitions: ReadonlyMap<string, NormalizedDefinition>): Coverage[] {
  const seen = new Map<string, { tests: Set<TestResult>; ran: Set<string>; skipped: Set<string>; trueTerms: Set<string> }>();
  for (const r of results) {
    for (const run of r.runs ?? []) {
      let c = seen.get(run.name);
      if (!c) seen.set(run.name, (c = { tests: new Set(), ran: new Set(), skipped: new Set(), trueTerms: new Set() }));
      c.tests.add(r);
      for (const t of run.tasks) {
        const task = templateOf(t.name);
        if (t.attempt > 0 || t.state === 'completed') c.ran.add(task);
        if (t.state === 'skipped') c.skipped.add(task);
        for (const term of t.wait?.evidence?.terms ?? t.wait?.last_evaluation?.terms ?? [])
          if (term.value === true) c.trueTerms.add(`${task}\u0000${term.name}`);
      }
    }
  }
  return [...seen.keys()].sort().flatMap((name) => {
    const def = definitions.get(name);
    const c = seen.get(name)!;
    if (!def) return [];
    const tasks = def.tasks.map((t) => t.name);
    return [
      {
        workflow: name,
        tests: c.tests.size,
        tasks,
        ran: tasks.filter((t) => c.ran.has(t)),
        skipped: tasks.filter((t) => c.skipped.has(t)),
        neverRan: tasks.filter((t) => !c.ran.has(t)),
        waits: def.tasks
          .filter((t) => t.wait)
          .map((t) => ({ task: t.name, terms: t.wait!.terms.map((term) => ({ name: term.name, everTrue: c.trueTerms.has(`${t.name}\u0000${term.name}`) })) })),
      },
    ];
  });
}
