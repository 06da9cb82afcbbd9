import type { BaselineVersion } from '../../deploy/baseline.js';
import type { Queryable } from '../db/types.js';
import { keysInUse, kindsInUse, startedShapes, type VersionNeed, versionsInUse } from '../sql/deploy.js';

/** A registered version's place in a deploy: new starts use it, workflows still run on it, or nothing does. */
export type DrainState = 'current' | 'draining' | 'drained';

export function drainState(v: { current: boolean; running: number }): DrainState {
  return v.current ? 'current' : v.running > 0 ? 'draining' : 'drained';
}

/** `draining (3 running)`, as `braid versions` and the UI say it. */
export function drainLabel(v: { current: boolean; running: number }): string {
  const state = drainState(v);
  return state === 'draining' ? `draining (${v.running} running)` : state;
}

/**
 * What a deploy compares with, read from the database: every current version and every version with running
 * workflows, each with the kinds and signal keys its running workflows still need.
 */
export async function inFlightVersions(q: Queryable, s: string, names?: readonly string[], started = false): Promise<BaselineVersion[]> {
  // what running workflows started (whether upgrade can move them) only where a deploy is planned
  const [versions, kinds, keys, shapes] = await Promise.all([
    versionsInUse(q, s, names),
    kindsInUse(q, s, names),
    keysInUse(q, s, names),
    started ? startedShapes(q, s, names) : undefined,
  ]);
  const needs = (rows: VersionNeed[], name: string, hash: string) =>
    Object.fromEntries(rows.filter((r) => r.name === name && r.hash === hash).map((r) => [r.item, r.n]));
  return versions.map((v) => ({
    name: v.name,
    hash: v.hash,
    current: v.current,
    running: v.running,
    normalized: v.normalized,
    kinds: needs(kinds, v.name, v.hash),
    keys: needs(keys, v.name, v.hash),
    started: shapes?.filter((r) => r.name === v.name && r.hash === v.hash).map(({ tasks, n, first }) => ({ tasks, n, first })),
  }));
}
