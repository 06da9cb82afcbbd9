import type { WaitPhase } from '../wire/index.js';

/**
 * Where a wait stands: deps not yet satisfied, active, resolved (evidence stored), or its task ended first.
 * Apart from the evaluation (decide.ts), so reading a task's state does not load CEL.
 */
export function waitPhase(t: { state: string; wait_started_at: Date | string | null; wait_evidence: unknown }): WaitPhase {
  if (t.wait_evidence) return 'resolved';
  if (t.state !== 'pending') return 'abandoned';
  return t.wait_started_at ? 'waiting' : 'pending_deps';
}
