import { sha256Hex } from '../../compiler/canonical-json.js';
import { renderTemplates } from '../../compiler/cel/evaluate.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { sealInputs } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { WORKFLOW_ID } from '../errors.js';
import { writeAudit } from '../sql/audit.js';
import { currentDefinition } from '../sql/definitions.js';
import { recordHookStart } from '../sql/effects.js';
import { failureOf, keepFailed } from '../sql/failures.js';
import type { AdvanceContext } from './context.js';

/** A run that just failed, as finalizeWorkflows has it. */
interface Failed {
  id: string;
  name: string;
  definition_hash: string;
  inputs: unknown;
  created_at: Date;
}

/**
 * What a definition asks of its failed runs, in the transaction that fails them: `retention.failed` keeps the
 * run (until a time, or for good), and `on_failure.start` records the start of a workflow with the failure in
 * its inputs (`failed.*`), applied by the leader's effect pass as a child start is (a statement here touches the
 * failed run alone). Its id is the run's id and attempt, so each failure starts it once, and a retried run that
 * fails again starts another. A hook that cannot start (its workflow gone, its inputs refused) leaves the failure
 * as it is and says why in the run's history.
 */
export async function afterFailures(q: Queryable, ctx: AdvanceContext, failed: readonly Failed[]): Promise<void> {
  for (const w of failed) {
    const def = await ctx.definitions.get(q, w.name, w.definition_hash);
    if (!def.retention && !def.on_failure) continue;
    if (def.retention) await keepFailed(q, ctx.s, w.id, def.retention.failed_ms === null ? null : new Date(ctx.now.getTime() + def.retention.failed_ms));
    if (def.on_failure) await startHook(q, ctx, w, def.on_failure.start);
  }
}

async function startHook(q: Queryable, ctx: AdvanceContext, w: Failed, hook: NonNullable<NormalizedDefinition['on_failure']>['start']): Promise<void> {
  const f = await failureOf(q, ctx.s, w.id);
  const failed = { id: w.id, name: w.name, error: f.error, task: f.task, attempt: f.attempt };
  const workflow = { id: w.id, name: w.name, created_at: w.created_at.toISOString(), attempt: f.attempt };
  let inputs: unknown;
  try {
    inputs = renderTemplates(hook.inputs, { inputs: w.inputs ?? {}, workflow, failed });
  } catch (error) {
    await hookFailed(q, ctx.s, ctx.now, w.id, hook.workflow, error as Error);
    return;
  }
  // the effect row holds the inputs until the hook is inserted: sealed as its workflow's schema says
  const target = ctx.dataKeys && (await currentDefinition(q, ctx.s, hook.workflow));
  if (target) inputs = sealInputs(inputs, target.normalized, ctx.dataKeys)?.inputs ?? inputs;
  await recordHookStart(q, ctx.s, ctx.schema, { id: hookKey(w.id, f.attempt), name: hook.workflow, inputs, failedId: w.id, now: ctx.now });
}

/** Says in the failed run's history that its hook could not start, and why (the failure itself stands). */
export async function hookFailed(q: Queryable, s: string, now: Date, failedId: string, workflow: string, error: Error): Promise<void> {
  const reason = `on_failure could not start ${workflow}: ${error.message.split('\n')[0]}`;
  await writeAudit(q, s, now, [{ actor: 'braid', action: 'on_failure.error', target: failedId, workflow_id: failedId, reason }]);
}

/** The hook's business key: the run's id and attempt (hashed when they would not fit an id). */
export function hookKey(id: string, attempt: number): string {
  const plain = `${id}.on_failure.${attempt}`;
  return WORKFLOW_ID.test(plain) ? plain : `on_failure.${sha256Hex(id).slice(0, 40)}.${attempt}`;
}
