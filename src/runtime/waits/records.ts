/** What wait evaluation stores on a task (tasks.wait_progress, tasks.wait_evidence), and how far one pass reads. */
import type { AwaitedWorkflow, SignalTermProgress, TermValue } from './decide.js';

/** What evaluation keeps between runs (tasks.wait_progress). */
export interface WaitProgressRecord {
  signal_terms: Record<string, SignalTermProgress>;
  /** Each workflows term's ids (resolved when the wait became active) and, once decided, its outcome for good. */
  workflow_terms?: Record<string, { ids: string[]; decided?: 'satisfied' | 'failed'; error?: string }>;
  last: { at: string; result: boolean; error?: string; terms: TermValue[]; truncated?: boolean };
}

/** The snapshot stored when a wait resolves (tasks.wait_evidence). */
export interface WaitEvidence {
  phase: 'resolved';
  started_at: string;
  resolved_at: string;
  expr: string;
  result: true;
  terms: TermValue[];
  inputs: {
    signals: Record<string, string[]>;
    timers: Record<string, { fire_at: string | null; fired: boolean }>;
    deps: Record<string, unknown>;
    /** Awaited workflows per workflows term: their states (and outputs, once completed). */
    workflows: Record<string, AwaitedWorkflow[]>;
  };
  /** Every signal id the evaluation used. */
  signal_ids: string[];
  /** The workflow's last signal id when the wait resolved: task-scoped reads stop here. */
  boundary: string;
}

/** How many signal rows one evaluation reads per term (diagnostics may ask for more, up to the maximum). */
export const DEFAULT_SCAN_LIMIT = 10_000;
export const MAX_SCAN_LIMIT = 100_000;
