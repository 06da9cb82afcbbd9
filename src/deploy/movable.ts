/**
 * Which running workflows of an older version `braid upgrade` could move to the version being deployed, from
 * the tasks they have started (the rules of runtime/engine/move.ts, as far as they hold without the inputs):
 * a removed task that ended stays as history; a removed one running, or retryable (without --cancel-removed),
 * refuses; a started task whose kind changed refuses, and so does a running one being renamed.
 */
import type { NormalizedDefinition } from '../compiler/normalize.js';
import { isFinal } from '../runtime/wire/index.js';
import type { BaselineVersion, StartedShape } from './baseline.js';
import { taskCorrespondence } from './task-map.js';

/** Why some workflows cannot move, with how many and the first of them. */
export interface Blocker {
  reason: string;
  /** --cancel-removed would let them move. */
  cancellable: boolean;
  n: number;
  first: string[];
}

export interface Movability {
  running: number;
  blocked: number;
  blockers: Blocker[];
}

/** What upgrading a version's running workflows to `next` would do; undefined when what they started is unknown. */
export function movability(v: BaselineVersion, next: NormalizedDefinition): Movability | undefined {
  if (!v.started || v.running === null) return undefined;
  const map = taskCorrespondence(v.normalized, next);
  const byReason = new Map<string, Blocker>();
  let blocked = 0;
  for (const shape of v.started) {
    const found = blocker(shape.tasks, map);
    if (!found) continue;
    blocked += shape.n;
    const b = byReason.get(found.reason) ?? { ...found, n: 0, first: [] };
    b.n += shape.n;
    b.first = [...b.first, ...shape.first].sort().slice(0, 3);
    byReason.set(found.reason, b);
  }
  return { running: v.running, blocked, blockers: [...byReason.values()].sort((a, b) => b.n - a.n || a.reason.localeCompare(b.reason)) };
}

function blocker(tasks: StartedShape['tasks'], map: ReturnType<typeof taskCorrespondence>): { reason: string; cancellable: boolean } | undefined {
  for (const t of tasks) {
    const target = map.get(t.template);
    if (!target) {
      if (isFinal(t.state)) continue;
      return { reason: `task "${t.name}" is ${t.state}, and this version has no such task`, cancellable: t.state !== 'running' };
    }
    if (target.kind !== t.kind)
      return { reason: `task "${t.name}" is ${t.state} with kind ${t.kind}, and this version runs it as kind ${target.kind}`, cancellable: false };
    if (target.name !== t.template && t.state === 'running')
      return { reason: `task "${t.name}" is running, and this version renames it (it moves once its attempt ends)`, cancellable: false };
  }
  return undefined;
}

/** Whom a hint may suggest moving with braid upgrade: every workflow, only some, or none (unknown: every). */
export function movableWorkflows(older: readonly BaselineVersion[], next: NormalizedDefinition | undefined): 'all' | 'some' | 'none' {
  const known = next ? older.map((v) => movability(v, next)) : [];
  if (known.length === 0 || known.some((m) => m === undefined)) return 'all';
  const movable = known.reduce((sum, m) => sum + m!.running - m!.blocked, 0);
  if (movable === 0) return 'none';
  return known.some((m) => m!.blocked > 0) ? 'some' : 'all';
}

/** The end of a hint that suggests moving workflows: only as far as braid upgrade would move them. */
export function upgradeSuggestion(name: string, older: readonly BaselineVersion[], next: NormalizedDefinition | undefined): string {
  const who = movableWorkflows(older, next);
  if (who === 'none') return '';
  return who === 'some' ? `, or move the ones that can: braid upgrade ${name} (deploy-unmovable says which cannot)` : `, or move them: braid upgrade ${name}`;
}
