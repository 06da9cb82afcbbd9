import type { Queryable } from '../db/types.js';
import { lockWorkflows } from '../sql/advance.js';
import { restartWorkflow, retryCandidates } from '../sql/retry.js';
import { workflowTraceRow } from '../sql/workflows.js';
import type { OpenSpan, Tracing } from '../telemetry/tracing.js';
import { activateWaits } from './advance.js';
import type { AdvanceContext } from './context.js';
import { isFailed, type RetryMode, readyState, retrySelection } from './decide.js';

export interface RetryResult {
  /** The workflow's new attempt. */
  attempt: number;
  /** The tasks that run again. */
  retried: string[];
  /** The version the retry runs on, and the current version of its name (null when none is registered). */
  version?: string;
  current?: string | null;
}

export class WorkflowNotFinalError extends Error {
  readonly code = 'workflow_not_final' as const;
  constructor(id: string, state: string) {
    super(`workflow ${id} is ${state}: only a finalized workflow can be retried`);
    this.name = 'WorkflowNotFinalError';
  }
}

/**
 * Starts a new attempt of a finalized workflow (caller's transaction, its lock taken here or already held): the selected tasks go back to pending
 * with their outputs, wait progress, evidence and timers cleared (reset_history also clears attempts and
 * errors, keeping max_attempts); signals stay, stamped with the attempt they belong to. Waits registered by
 * others on this workflow keep what they decided; undecided ones see it running again.
 */
export async function retryWorkflow(
  q: Queryable,
  ctx: AdvanceContext,
  id: string,
  options: { mode: RetryMode; resetHistory: boolean; selection?: ReadonlySet<string> },
): Promise<RetryResult | undefined> {
  const { s, now } = ctx;
  const w = (await lockWorkflows(q, s, [id])).get(id);
  if (!w) return undefined;
  if (w.state === 'running') throw new WorkflowNotFinalError(id, w.state);
  const tasks = await retryCandidates(q, s, id);
  // a retry on another version (retry --on-current) chose its tasks before the move renamed and added some
  const selected = options.selection ?? retrySelection(tasks, options.mode);
  if (selected.size === 0) return { attempt: w.attempt, retried: [] };
  const attempt = w.attempt + 1;
  const rows = runAgainRows(tasks, selected, now);
  const stillFailed = tasks.filter((t) => !selected.has(t.name) && isFailed(t.state)).length;
  const span = ctx.tracing?.enabled() ? await beginAttemptSpan(q, ctx.tracing, ctx.s, id, attempt) : null;
  await restartWorkflow(q, s, { id, attempt, now, open: rows.length, failed: stillFailed, traceContext: span?.stored ?? null }, rows, options.resetHistory);
  ctx.tracing?.end(span, undefined, { 'braid.workflow.tasks': rows.length });
  await activateWaits(
    q,
    ctx,
    id,
    rows.filter((r) => r.deps_left === 0 && r.state === 'pending').map((r) => r.name),
  );
  return { attempt, retried: rows.map((r) => r.name) };
}

/**
 * The selected tasks as they start again: each counts its deps that run again too (the others stay as they
 * ended) and takes its first state from that.
 */
export function runAgainRows(
  tasks: readonly { name: string; deps: readonly string[]; held: boolean; scheduled_at: Date | string }[],
  selected: ReadonlySet<string>,
  now: Date,
): { name: string; deps_left: number; state: string }[] {
  return tasks
    .filter((t) => selected.has(t.name))
    .map((t) => {
      const depsLeft = t.deps.filter((d) => selected.has(d)).length;
      return { name: t.name, deps_left: depsLeft, state: readyState({ deps_left: depsLeft, held: t.held, scheduled_at: new Date(t.scheduled_at) }, now) };
    });
}

/** A new workflow attempt's span, under the caller's context, linked to the attempt before it. */
async function beginAttemptSpan(q: Queryable, tracing: Tracing, s: string, id: string, attempt: number): Promise<OpenSpan | null> {
  const w = await workflowTraceRow(q, s, id);
  if (!w) return null;
  return tracing.begin(
    `braid.workflow ${w.name}`,
    'producer',
    { 'braid.workflow.id': id, 'braid.workflow.name': w.name, 'braid.workflow.attempt': attempt },
    tracing.callerContext(),
    [{ stored: w.trace_context, attributes: { 'braid.link': 'previous_attempt', 'braid.workflow.attempt': attempt - 1 } }],
  );
}
