/**
 * Applies effects that cross workflows (SPEC "Scale"): each is a row keyed by the workflow it acts on and
 * is applied in a transaction of its own. A child start inserts the child; a cancel cancels it; a
 * finalization others wait on fans out into one `evaluate` effect per waiting workflow, which re-evaluates
 * exactly the tasks registered on the finalized workflow.
 */
import { compile } from '../../compiler/instantiate.js';
import type { Queryable } from '../db/types.js';
import { advanceAt, clockNow, type RuntimeContext } from '../context.js';
import type { AdvanceContext } from '../sql/advance.js';
import { lockWorkflows } from '../sql/advance.js';
import { insertPlan } from '../engine/insert.js';
import { cancelWorkflow } from '../engine/cancel.js';
import { childStartable, deleteEffect, fanOutFinalized, lockEffect, oldestEffects, type EffectRow } from '../sql/effects.js';
import { evaluateWaits } from '../waits/evaluate.js';
import { CoalescedPass } from '../coalesced.js';
import type { MaintenanceContext, MaintenanceService } from './service.js';

const UNLIMITED = { forEachItems: Infinity, planTasks: Infinity, celCost: Infinity };

interface EvaluatePayload {
  awaited: string;
  tasks: string[];
}

interface StartPayload {
  parent_id: string;
  parent_task: string;
  group: string;
  name: string;
  definition_hash: string;
  inputs: unknown;
  requested_at: string;
}

/**
 * Applies pending effects, oldest first, in bounded batches, until none is left that this process can take
 * (effects that others hold are theirs); those an effect creates (a fan-out) are applied in the same call.
 * Returns how many were applied.
 */
export async function applyEffects(
  rt: RuntimeContext,
  onError: (effect: { workflow_id: string; id: string; kind: string }, error: Error) => void,
  limit = 200,
): Promise<number> {
  const { db, s } = rt;
  let applied = 0;
  const failed = new Set<string>();
  for (;;) {
    const rows = await oldestEffects(db, s, limit + failed.size);
    let round = 0;
    for (const e of rows) {
      if (failed.has(e.id)) continue;
      try {
        if (await applyEffect(rt, e)) round++;
      } catch (error) {
        // one effect that cannot apply (it is kept, and tried again next time) never holds the others back
        failed.add(e.id);
        onError(e, error as Error);
      }
    }
    applied += round;
    if (round === 0) return applied;
  }
}

async function applyEffect(rt: RuntimeContext, e: EffectRow): Promise<boolean> {
  const { s } = rt;
  return rt.db.transaction(async (tx) => {
    if (!(await lockEffect(tx, s, e.workflow_id, e.id))) return false;
    const ctx = advanceAt(rt, await clockNow(rt, tx));
    if (e.kind === 'finalized') await fanOutFinalized(tx, s, ctx.schema, e.workflow_id, ctx.now);
    else if (e.kind === 'evaluate') {
      await lockWorkflows(tx, s, [e.workflow_id]);
      await evaluateWaits(tx, ctx, e.workflow_id, { names: (e.payload as EvaluatePayload).tasks });
    } else if (e.kind === 'cancel') await cancelWorkflow(tx, ctx, e.workflow_id);
    else await startChild(tx, ctx, s, e.workflow_id, e.payload as StartPayload);
    await deleteEffect(tx, s, e.workflow_id, e.id);
    return true;
  });
}

/** Inserts a child workflow, unless it exists already or its parent is being cancelled. */
async function startChild(tx: Queryable, ctx: AdvanceContext, s: string, id: string, p: StartPayload): Promise<void> {
  if (!(await childStartable(tx, s, id, p.parent_id))) return;
  const def = await ctx.definitions.get(tx, p.name, p.definition_hash);
  // the start task compiled this very plan within its runtime's limits before recording the effect
  const plan = compile(def, p.inputs, { id, now: new Date(p.requested_at), limits: UNLIMITED });
  plan.workflow.definition.hash = p.definition_hash;
  await insertPlan(tx, ctx, plan, { parentId: p.parent_id, group: p.group });
}

/** Effects as a maintenance service: passes never overlap; one effect that fails is kept and tried again later. */
export class EffectService implements MaintenanceService {
  readonly name = 'effects';
  private pass?: CoalescedPass;

  constructor(readonly intervalMs: number) {}

  runOnce(ctx: MaintenanceContext): Promise<number> {
    this.pass ??= new CoalescedPass(() =>
      applyEffects(
        ctx,
        (e, error) => ctx.log.warn(`leader: ${e.kind} effect ${e.id} on workflow ${e.workflow_id} failed (kept, tried again later): ${error.message}`),
      ),
    );
    return this.pass.run();
  }

  async settled(): Promise<void> {
    await this.pass?.settled();
  }
}
