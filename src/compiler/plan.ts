import type { Deferred } from './cel/deferred.js';
import type { PlanFlow } from './flow.js';
import type { NormalizedRetry, NormalizedStart, NormalizedTerm, NormalizedTimer } from './normalize.js';

/** The insertion plan: everything the runtime inserts, fully resolved. Described by schema/plan.schema.json. */
export interface Plan {
  format: 1;
  workflow: PlanWorkflow;
  tasks: PlanTask[];
}

export interface PlanWorkflow {
  id: string;
  name: string;
  definition: { name: string; hash: string };
  inputs: unknown;
  /** Templates over inputs, workflow and tasks, evaluated once when the workflow completes. */
  output: unknown;
  /** Present only when the definition sets a timeout: the workflow fails with reason timeout this long after created_at. */
  timeout_ms?: number;
  created_at: string;
}

export interface PlanTask {
  name: string;
  /** The definition's task this one comes from (differs from name for for_each expansions). */
  template: string;
  /** Position and key of a for_each expansion; null for an ordinary task. */
  index: number | null;
  key: string | null;
  kind: string;
  description: string | null;
  args: unknown;
  deps: string[];
  queue: string;
  priority: number;
  max_attempts: number;
  timeout_ms: number | null;
  scheduled_at: string | null;
  retry: NormalizedRetry;
  ignore_cancelled_deps: boolean;
  ignore_discarded_deps: boolean;
  ignore_deleted_deps: boolean;
  ignore_skipped_deps: boolean;
  /** The task's condition (raw CEL over inputs, workflow and deps), evaluated once every dep is final. */
  when: string | null;
  wait: PlanWait | null;
  /** Child workflows to start: templates evaluated when the task runs. */
  start: NormalizedStart | null;
  metadata: unknown;
  /** Strings of args and metadata whose templates read deps: rendered when the task becomes available (cel/deferred.ts). */
  deferred: Deferred | null;
  /** Its flow control, keys and counts resolved (absent without any). */
  flow?: PlanFlow;
}

export interface PlanWait {
  expr: string;
  terms: PlanTerm[];
  signals: string[];
  timers: PlanTimer[];
}

/** Timers with `at` are resolved to an absolute RFC 3339 time at compile. */
export type PlanTimer = NormalizedTimer;
/** A term as the plan holds it: a signal term's count resolved to a number at compile. */
export type PlanTerm = Exclude<NormalizedTerm, { kind: 'signal' }> | (Extract<NormalizedTerm, { kind: 'signal' }> & { count: number });
