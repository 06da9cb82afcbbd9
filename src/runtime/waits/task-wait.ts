/**
 * A handler's view of its task's resolved wait (ctx.wait), built from the evidence stored when the wait
 * resolved and the signal rows it names: a pure function, so what a handler sees is what status shows.
 */

import type { SignalRow, TermValue, WaitEvidence } from '../wire/index.js';
import type { TaskWait, WaitTermEvidence } from '../worker/handlers.js';

/** The signal ids a handler's view reads: those that counted toward each signal term. */
export function evidenceSignalIds(evidence: WaitEvidence): string[] {
  return [...new Set(evidence.terms.flatMap((t) => (t.kind === 'signal' ? (t.signal_ids ?? []) : [])))];
}

export function taskWait(evidence: WaitEvidence, rows: readonly SignalRow[]): TaskWait {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const terms: Record<string, WaitTermEvidence> = {};
  for (const t of evidence.terms) terms[t.name] = termEvidence(t, byId, evidence.inputs.workflows[t.name] ?? []);
  return {
    expr: evidence.expr,
    startedAt: new Date(evidence.started_at),
    resolvedAt: new Date(evidence.resolved_at),
    satisfied: evidence.terms.filter((t) => t.value).map((t) => t.name),
    terms,
  };
}

function termEvidence(t: TermValue, byId: ReadonlyMap<string, SignalRow>, awaited: WaitEvidence['inputs']['workflows'][string]): WaitTermEvidence {
  switch (t.kind) {
    case 'signal':
      return {
        kind: 'signal',
        value: t.value,
        // a row retention removed since is left out rather than invented
        signals: (t.signal_ids ?? []).flatMap((id) => byId.get(id) ?? []),
        matched: t.matched ?? 0,
        required: t.required ?? 1,
        ...(t.distinct !== undefined ? { distinct: t.distinct } : {}),
      };
    case 'timer':
      return { kind: 'timer', value: t.value, fireAt: t.fire_at ? new Date(t.fire_at) : null };
    case 'workflows':
      return {
        kind: 'workflows',
        value: t.value,
        outcome: t.outcome ?? 'undecided',
        workflows: awaited.map((w) => ({ id: w.id, state: w.state, output: w.output })),
        completed: t.completed ?? 0,
        failed: t.failed ?? 0,
        required: t.required ?? awaited.length,
      };
    default:
      return { kind: 'expr', value: t.value, ...(t.error !== undefined ? { error: t.error } : {}) };
  }
}
