import { renderSecrets, sealMatching } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { countClosed, deleteTaskRows, endWorkflows, type Finalized, type SettleResult, taskResults, type WorkflowRow } from '../sql/advance.js';
import { advanceWave } from '../sql/advance-wave.js';
import type { AdvanceContext } from './context.js';
import { finalWorkflowState, isFailed, isFinal } from './decide.js';
import { afterFailures } from './failure-hooks.js';
import { evaluateOutput } from './output.js';

/**
 * Applies finalized tasks of one workflow whose row lock the caller holds, wave by wave (sql/advance-wave.ts, one
 * statement each): each dependent either advances (deps_left falls; at zero it becomes available, scheduled, or
 * its wait or condition becomes ready) or, for a failed dep that its flags do not ignore, is cancelled, or for a
 * skipped dep, is skipped; those it ends are the next wave. Then the workflow's open-task counter falls, and at
 * zero the workflow finalizes. The waits it made ready are the caller's to activate: advanceWorkflow()
 * (advance.ts) is the sequence every path uses. Each wave ends pending tasks only, so the waves are at most as
 * many as the workflow's tasks.
 */
export async function settle(q: Queryable, ctx: AdvanceContext, workflowId: string, finalized: Finalized[]): Promise<SettleResult> {
  const result: SettleResult = { waitsReady: [] };
  let closed = 0;
  let failed = 0;
  let wave: Finalized[] = finalized;
  while (wave.length > 0) {
    const counted = wave.filter((f) => !f.alreadyClosed);
    closed += counted.length;
    failed += counted.filter((f) => f.state === 'deleted' || isFailed(f.state)).length;
    const moved = await advanceWave(q, ctx, workflowId, wave);
    result.waitsReady.push(...moved.waitsReady);
    wave = moved.ended;
  }
  result.workflowState = await closeTasks(q, ctx, workflowId, closed, failed);
  return result;
}

/** Deleted task rows as finalized tasks: a row already final no longer counts in the open set. */
export async function deleteFinalized(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<Finalized[]> {
  const rows = await deleteTaskRows(q, s, workflowId, names);
  return rows.map((r) => ({ name: r.name, state: 'deleted' as const, dependents: r.dependents, alreadyClosed: isFinal(r.state) }));
}

/** Counts tasks out of the workflow's open set; finalizes the workflow when none is left. */
export async function closeTasks(q: Queryable, ctx: AdvanceContext, workflowId: string, closed: number, failed: number): Promise<string | undefined> {
  const w = await countClosed(q, ctx.s, workflowId, closed, failed);
  if (!w || w.tasks_open > 0 || w.state !== 'running') return undefined;
  return (await finalizeWorkflows(q, ctx, [w])).get(w.id);
}

/**
 * Workflows end: completed (with their output evaluated once), failed, or cancelled. Those without an
 * output template end in one statement; the others are evaluated one by one.
 */
export async function finalizeWorkflows(q: Queryable, ctx: AdvanceContext, workflows: readonly WorkflowRow[]): Promise<Map<string, string>> {
  const ended: { id: string; state: string; output: unknown; output_error: string | null }[] = [];
  for (const w of workflows) {
    const state = finalWorkflowState(w);
    let output: { output: unknown; error?: string } = { output: null };
    if (state === 'completed' && w.output_template !== null) {
      const def = await ctx.definitions.get(q, w.name, w.definition_hash);
      const results = await taskResults(q, ctx.s, w.id);
      output = evaluateOutput(def, w.output_template, w, results);
      // an output made from sensitive inputs or outputs is sealed where it holds one, as args are
      const secrets = ctx.dataKeys ? renderSecrets(def, w.inputs, results) : undefined;
      if (secrets && secrets.size > 0) output.output = sealMatching(output.output, secrets, ctx.dataKeys!);
    }
    ended.push({ id: w.id, state, output: output.output, output_error: output.error ?? null });
  }
  await endWorkflows(q, ctx, ended);
  const failed = new Set(ended.filter((e) => e.state === 'failed').map((e) => e.id));
  if (failed.size > 0)
    await afterFailures(
      q,
      ctx,
      workflows.filter((w) => failed.has(w.id)),
    );
  return new Map(ended.map((e) => [e.id, e.state]));
}
