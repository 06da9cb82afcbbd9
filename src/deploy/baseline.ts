import type { NormalizedDefinition } from '../compiler/normalize.js';

/**
 * A version a deploy is compared with: a registered version that is current or still has running workflows
 * (from the database), or the version of a workflow at a git ref (no database: what runs is unknown).
 */
export interface BaselineVersion {
  name: string;
  hash: string;
  /** The current registered version of its name (at a git ref: the version there). */
  current: boolean;
  /** Its running workflows; null when unknown (a git ref). */
  running: number | null;
  normalized: NormalizedDefinition;
  /**
   * The kinds its running workflows' unfinished tasks still need, with how many workflows need each; absent
   * when unknown (a git ref), and then every kind the version uses may be needed.
   */
  kinds?: Record<string, number>;
  /** The signal keys its running workflows' pending tasks wait on, with how many workflows; absent when unknown. */
  keys?: Record<string, number>;
  /** Its running workflows grouped by the tasks they have started (what decides whether one can move); absent when unknown. */
  started?: StartedShape[];
}

/** Running workflows of one version that have started the same tasks, in the same states. */
export interface StartedShape {
  tasks: { template: string; name: string; kind: string; state: string }[];
  n: number;
  /** The first few of them, by id. */
  first: string[];
}

/** What a deploy is compared with, for messages. */
export type Against = { kind: 'db' } | { kind: 'git'; ref: string };

/** What the workflows in flight on a version do, for messages: `3 running on 2826bc91b013 need it` (or "may", when unknown). */
export function inFlight(v: Pick<BaselineVersion, 'hash' | 'running'>, count: number | undefined, does: readonly [one: string, many: string]): string {
  const short = v.hash.slice(0, 12);
  const n = count ?? v.running;
  return n === null ? `workflows started on ${short} may still run and ${does[1]}` : `${n} running on ${short} ${n === 1 ? does[0] : does[1]}`;
}
