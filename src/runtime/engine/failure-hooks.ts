import { sha256Hex } from '../../compiler/canonical-json.js';
import { renderTemplates } from '../../compiler/cel/evaluate.js';
import type { NormalizedDefinition } from '../../compiler/normalize.js';
import { sealInputs } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { WORKFLOW_ID } from '../errors.js';
import { writeAudit } from '../sql/audit.js';
import { currentDefinition } from '../sql/definitions.js';
import { recordHookStart } from '../sql/effects.js';
import { countFailure, type DueGroup, dropGroup, failureOf, keepFailed, reopenGroup } from '../sql/failures.js';
import type { AdvanceContext } from './context.js';

/** A run that just failed, as finalizeWorkflows has it. */
interface Failed {
  id: string;
  name: string;
  definition_hash: string;
  inputs: unknown;
  created_at: Date;
}

/** A failure as its hook reads it: the failed run and attempt, its version, and what the hook's templates read. */
export interface HookFire {
  failed_id: string;
  attempt: number;
  hash: string;
  context: { inputs: unknown; workflow: Record<string, unknown>; failed: Record<string, unknown> };
}

type Hook = NonNullable<NormalizedDefinition['on_failure']>;

/** A group's key longer than this is kept as its digest (the key is a primary key's part). */
const MAX_KEY = 200;

/**
 * What a definition asks of its failed runs, in the transaction that fails them: `retention.failed` keeps the
 * run (until a time, or for good), and `on_failure` records the start of a workflow with the failure in its
 * inputs (`failed.*`), applied by the leader's effect pass as a child start is (a statement here touches the
 * failed run alone, and a grouped hook its group's row). Its id is the run's id and attempt, so each failure starts
 * it once, and a retried run that fails again starts another. A grouped hook starts one run per group per window:
 * the first failure's at once, the rest counted for the window's end (endWindow). A hook that cannot start (its
 * workflow gone, its inputs refused) leaves the failure as it is and says why in the run's history.
 */
export async function afterFailures(q: Queryable, ctx: AdvanceContext, failed: readonly Failed[]): Promise<void> {
  for (const w of failed) {
    const def = await ctx.definitions.get(q, w.name, w.definition_hash);
    if (!def.retention && !def.on_failure) continue;
    if (def.retention) await keepFailed(q, ctx.s, w.id, def.retention.failed_ms === null ? null : new Date(ctx.now.getTime() + def.retention.failed_ms));
    if (def.on_failure) await onFailure(q, ctx, w, def.on_failure);
  }
}

async function onFailure(q: Queryable, ctx: AdvanceContext, w: Failed, hook: Hook): Promise<void> {
  const f = await failureOf(q, ctx.s, w.id);
  const failed = { id: w.id, name: w.name, error: f.error, task: f.task, attempt: f.attempt };
  const workflow = { id: w.id, name: w.name, created_at: w.created_at.toISOString(), attempt: f.attempt };
  const fire: HookFire = { failed_id: w.id, attempt: f.attempt, hash: w.definition_hash, context: { inputs: w.inputs ?? {}, workflow, failed } };
  if (!hook.group) return startHook(q, ctx, hook, fire, 1, '');
  const key = await groupKey(q, ctx, hook, fire);
  const windowEndsAt = new Date(ctx.now.getTime() + hook.group.window_ms);
  const count = await countFailure(q, ctx.s, { name: w.name, key, now: ctx.now, windowEndsAt, last: fire });
  if (count > 0) await startHook(q, ctx, hook, fire, count, key);
}

/** The failure's group: group_by rendered (one group without it); a key that does not render is said, and grouped as ''. */
async function groupKey(q: Queryable, ctx: AdvanceContext, hook: Hook, fire: HookFire): Promise<string> {
  if (hook.group?.by === undefined) return '';
  let value: unknown;
  try {
    value = renderTemplates(hook.group.by, fire.context);
  } catch (error) {
    await hookFailed(
      q,
      ctx.s,
      ctx.now,
      fire.failed_id,
      hook.start.workflow,
      new Error(`group_by did not render, grouped under '': ${(error as Error).message}`),
    );
    return '';
  }
  const key = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return key.length > MAX_KEY ? `sha256:${sha256Hex(key)}` : key;
}

/**
 * A group whose window has ended (the leader's pass, failure-groups.ts): the failures it counted start one run,
 * rendered from the latest of them with their count, and the next window opens; a group that counted nothing ends.
 */
export async function endWindow(q: Queryable, ctx: AdvanceContext, g: DueGroup): Promise<boolean> {
  const fire = g.last_failure as HookFire | null;
  const hook = fire && (await ctx.definitions.get(q, g.name, fire.hash)).on_failure;
  if (g.pending === 0 || !fire || !hook?.group) {
    await dropGroup(q, ctx.s, g);
    return false;
  }
  await startHook(q, ctx, hook, fire, g.pending, g.group_key);
  await reopenGroup(q, ctx.s, g, new Date(ctx.now.getTime() + hook.group.window_ms));
  return true;
}

/** Records the hook's start for `count` failures of `group` (inputs rendered now, sealed as the started workflow says). */
async function startHook(q: Queryable, ctx: AdvanceContext, hook: Hook, fire: HookFire, count: number, group: string): Promise<void> {
  let inputs: unknown;
  try {
    inputs = renderTemplates(hook.start.inputs, { ...fire.context, failed: { ...fire.context.failed, count, group } });
  } catch (error) {
    await hookFailed(q, ctx.s, ctx.now, fire.failed_id, hook.start.workflow, error as Error);
    return;
  }
  // the effect row holds the inputs until the hook is inserted: sealed as its workflow's schema says
  const target = ctx.dataKeys && (await currentDefinition(q, ctx.s, hook.start.workflow));
  if (target) inputs = sealInputs(inputs, target.normalized, ctx.dataKeys)?.inputs ?? inputs;
  const id = hookKey(fire.failed_id, fire.attempt);
  await recordHookStart(q, ctx.s, ctx.schema, { id, name: hook.start.workflow, inputs, failedId: fire.failed_id, now: ctx.now });
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
