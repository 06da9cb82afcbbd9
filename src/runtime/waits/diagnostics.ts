/**
 * Live wait diagnostics: a task's wait evaluated now, from the first signal row, without writing anything.
 */
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { loadWaitWorkflow, waitTask } from '../sql/waits.js';
import type { WaitDiagnostics } from '../wire/index.js';
import { evaluateWait } from './decide.js';
import { gatherInputs } from './gather.js';
import { waitPhase } from './phase.js';
import { DEFAULT_SCAN_LIMIT, MAX_SCAN_LIMIT } from './records.js';

export type { WaitDiagnostics };

export class DiagnosticsError extends Error {
  readonly code = 'diagnostics_unavailable' as const;
  constructor(message: string) {
    super(message);
    this.name = 'DiagnosticsError';
  }
}

/** Evaluates a task's wait now. Undefined when the workflow or the task does not exist. */
export async function waitDiagnostics(
  q: Queryable,
  ctx: AdvanceContext,
  workflowId: string,
  task: string,
  options: { signalScanLimit?: number } = {},
): Promise<WaitDiagnostics | undefined> {
  const limit = options.signalScanLimit ?? DEFAULT_SCAN_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_SCAN_LIMIT)
    throw new DiagnosticsError(`the signal scan limit is a whole number from 1 to ${MAX_SCAN_LIMIT}`);
  const w = await loadWaitWorkflow(q, ctx.s, workflowId);
  if (!w) return undefined;
  const t = await waitTask(q, ctx.s, workflowId, task);
  if (!t) return undefined;
  if (!t.wait) throw new DiagnosticsError(`task "${task}" has no wait`);
  const gathered = (await gatherInputs(q, ctx, w, [{ ...t, wait: t.wait, wait_progress: null }], { fromScratch: true, scanLimit: limit })).get(t.name)!;
  const outcome = evaluateWait(t.wait, gathered.inputs);
  const now = ctx.now;
  const signals = Object.fromEntries(Object.entries(gathered.genericSignals).map(([key, list]) => [key, { count: list.length, ids: list.map((r) => r.id) }]));
  return {
    workflow_id: workflowId,
    task,
    phase: waitPhase(t),
    expr: t.wait.expr,
    expr_result: outcome.result,
    eval_error: outcome.error ?? null,
    terms: outcome.terms,
    inputs: {
      signals,
      timers: Object.fromEntries(
        Object.entries(gathered.inputs.timers).map(([name, at]) => [
          name,
          { fire_at: at === null ? null : at.toISOString(), fired: at !== null && at.getTime() <= now.getTime() },
        ]),
      ),
      deps: gathered.depOutputs,
    },
    truncated: gathered.truncated,
    signal_scan_limit: limit,
    signals_scanned: gathered.signalsScanned,
    evaluated_at: now.toISOString(),
    evidence: t.wait_evidence,
  };
}
