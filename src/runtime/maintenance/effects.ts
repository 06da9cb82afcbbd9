/**
 * Applies effects that cross workflows (SPEC "Scale"): each is a row keyed by the workflow it acts on, applied
 * under that workflow's lock. A child start inserts the child; a cancel cancels it; a
 * finalization others wait on fans out into one `evaluate` effect per waiting workflow, which re-evaluates
 * exactly the tasks registered on the finalized workflow.
 */

import { CoalescedPass } from '../../pacing/coalesced.js';
import { ArgsError } from '../core/describe-error.js';
import { compiler } from '../core/lazy-compiler.js';
import { Secrets, scrubOutcome } from '../core/privacy.js';
import { sealPlan } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { advanceWorkflow, evaluateWaits } from '../engine/advance.js';
import { cancelWorkflow } from '../engine/cancel.js';
import type { AdvanceContext } from '../engine/context.js';
import { endAttempt } from '../engine/end-attempt.js';
import { hookFailed } from '../engine/failure-hooks.js';
import { insertPlan } from '../engine/insert.js';
import { renderTaskArgs } from '../engine/render-args.js';
import { lockWorkflows } from '../sql/advance.js';
import { currentDefinition } from '../sql/definitions.js';
import { childStartable, deleteEffect, type EffectRow, fanOutFinalized, lockEffect, oldestEffects, underSavepoint, workflowExists } from '../sql/effects.js';
import { leaderAttempt, RENDER_WORKER, renderCandidate, storeRenderedForWorker } from '../sql/protocol.js';
import { inBatches } from './batches.js';
import type { MaintenanceContext, MaintenanceService } from './service.js';

const UNLIMITED = { forEachItems: Infinity, planTasks: Infinity, celCost: Infinity };

interface EvaluatePayload {
  awaited: string;
  tasks: string[];
}

interface AdvancePayload {
  ended: { name: string; state: 'discarded' | 'cancelled' }[];
}

interface StartPayload {
  parent_id: string;
  parent_task: string;
  group: string;
  name: string;
  definition_hash: string;
  inputs: unknown;
  requested_at: string;
  /** The start task attempt's span, when it recorded (absent in effects recorded before braid traced). */
  trace_context?: string | null;
}

/** Rounds of one pass: effects that make more (fan-outs) are applied in the same pass, up to this many rounds. */
const MAX_ROUNDS = 100;

/**
 * Applies pending effects, oldest first, until none is left that this process can take (effects that others
 * hold are theirs); those an effect creates (a fan-out) are applied in the same call. The effects of many
 * workflows share a transaction (batches.ts: each workflow locked first), each under a savepoint of its own,
 * so one that cannot apply is kept, reported and tried again next pass without holding the others back.
 * Returns how many were applied.
 */
export async function applyEffects(
  rt: MaintenanceContext,
  onError: (effect: { workflow_id: string; id: string; kind: string }, error: Error) => void,
  limit = 1000,
): Promise<number> {
  let applied = 0;
  const failed = new Set<string>();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const byWorkflow = new Map<string, EffectRow[]>();
    for (const e of await oldestEffects(rt.db, rt.s, limit + failed.size)) {
      if (failed.has(e.id)) continue;
      const list = byWorkflow.get(e.workflow_id);
      if (list) list.push(e);
      else byWorkflow.set(e.workflow_id, [e]);
    }
    if (byWorkflow.size === 0) return applied;
    const n = await inBatches(rt, [...byWorkflow.keys()], 'applying effects', async (tx, ctx, ids) => {
      let done = 0;
      for (const id of ids) {
        for (const e of byWorkflow.get(id)!) {
          const ok = await underSavepoint(
            tx,
            () => applyEffect(tx, rt, ctx, e),
            (error) => {
              failed.add(e.id);
              onError(e, error);
            },
          );
          if (ok) done++;
        }
      }
      return done;
    });
    applied += n;
    if (n === 0) return applied;
  }
  return applied;
}

async function applyEffect(tx: Queryable, rt: MaintenanceContext, ctx: AdvanceContext, e: EffectRow): Promise<boolean> {
  const { s } = ctx;
  if (!(await lockEffect(tx, s, e.workflow_id, e.id))) return false;
  if (e.kind === 'finalized') await fanOutFinalized(tx, s, ctx.schema, e.workflow_id, ctx.now);
  else if (e.kind === 'evaluate') await evaluateWaits(tx, ctx, e.workflow_id, { names: (e.payload as EvaluatePayload).tasks });
  else if (e.kind === 'cancel') await cancelWorkflow(tx, ctx, e.workflow_id);
  else if (e.kind === 'hook') await startHook(tx, ctx, e.workflow_id, e.payload as HookPayload);
  // a task a protocol worker ended for good (sql/protocol.sql end_attempt): its dependents move on
  else if (e.kind === 'advance') await advanceEnded(tx, ctx, e.workflow_id, e.payload as AdvancePayload);
  else if (e.kind === 'render') await renderForWorker(tx, rt, ctx, e.workflow_id, (e.payload as { task: string }).task);
  else await startChild(tx, ctx, s, e.workflow_id, e.payload as StartPayload);
  await deleteEffect(tx, s, e.workflow_id, e.id);
  return true;
}

async function advanceEnded(tx: Queryable, ctx: AdvanceContext, id: string, p: AdvancePayload): Promise<void> {
  await lockWorkflows(tx, ctx.s, [id]);
  await advanceWorkflow(tx, ctx, id, p.ended);
}

/**
 * Renders the args of a task a protocol worker gave back for it (end_attempt 'render'): stored with the task,
 * which is offered again at once; args that do not render fail an attempt (args_invalid), as they would on a
 * TypeScript worker. A task that moved on since (cancelled, rendered already) is left alone.
 */
async function renderForWorker(tx: Queryable, rt: MaintenanceContext, ctx: AdvanceContext, id: string, task: string): Promise<void> {
  await lockWorkflows(tx, ctx.s, [id]);
  const row = await renderCandidate(tx, ctx.s, id, task);
  if (row?.state !== 'scheduled' || !row.deferred || row.deferred.rendered) return;
  try {
    const { stored } = await renderTaskArgs(rt, { workflow_id: id, name: task, template: row.template, deps: row.deps }, row.deferred);
    await storeRenderedForWorker(tx, ctx.s, id, task, stored, ctx.now);
  } catch (error) {
    if (!(error instanceof ArgsError)) throw error;
    await leaderAttempt(tx, ctx.s, id, task, ctx.now);
    const ref = { workflowId: id, name: task, attempt: row.attempt + 1, workerId: RENDER_WORKER };
    await endAttempt(
      tx,
      ctx,
      ref,
      scrubOutcome({ type: 'error', error: { message: error.message, kind: 'error', code: 'args_invalid' } }, Secrets.of(error.secrets)),
    );
  }
}

/** Inserts a child workflow, unless it exists already or its parent is being cancelled. */
async function startChild(tx: Queryable, ctx: AdvanceContext, s: string, id: string, p: StartPayload): Promise<void> {
  if (!(await childStartable(tx, s, id, p.parent_id))) return;
  const def = await ctx.definitions.get(tx, p.name, p.definition_hash);
  // the start task compiled this very plan within its runtime's limits before recording the effect
  const { compile } = await compiler();
  const plan = sealPlan(compile(def, p.inputs, { id, now: new Date(p.requested_at), limits: UNLIMITED }), def, ctx.dataKeys);
  plan.workflow.definition.hash = p.definition_hash;
  // the child's workflow span, under the start task attempt's that asked for it
  const span =
    ctx.tracing?.begin(
      `braid.workflow ${p.name}`,
      'producer',
      {
        'braid.workflow.id': id,
        'braid.workflow.name': p.name,
        'braid.workflow.version': p.definition_hash.slice(0, 12),
        'braid.workflow.attempt': 1,
        'braid.workflow.parent_id': p.parent_id,
        'braid.workflow.group': p.group,
      },
      ctx.tracing.contextOf(p.trace_context),
    ) ?? null;
  await insertPlan(tx, ctx, plan, { parentId: p.parent_id, group: p.group, traceContext: span?.stored });
  ctx.tracing?.end(span, undefined, { 'braid.workflow.tasks': plan.tasks.length });
}

interface HookPayload {
  name: string;
  inputs: unknown;
  failed_id: string;
}

/**
 * A failed run's on_failure start, once (a workflow with its id already there is it): from its workflow's
 * current version. Inputs its schema refuses, or a workflow no longer registered, are said in the failed run's
 * history instead, and the effect ends: a retry would fail the same way.
 */
async function startHook(tx: Queryable, ctx: AdvanceContext, id: string, p: HookPayload): Promise<void> {
  if (await workflowExists(tx, ctx.s, id)) return;
  const def = await currentDefinition(tx, ctx.s, p.name);
  const { compile } = await compiler();
  try {
    if (!def) throw new Error(`no workflow named ${p.name} is registered`);
    const plan = sealPlan(compile(def.normalized, p.inputs, { id, now: ctx.now, limits: UNLIMITED, hash: def.hash }), def.normalized, ctx.dataKeys);
    await insertPlan(tx, ctx, plan);
  } catch (error) {
    // the inputs refused (a CompileError's diagnostics) or no workflow to start: said, not tried again
    const diagnostics = (error as { diagnostics?: { message: string }[] }).diagnostics;
    if (def && !Array.isArray(diagnostics)) throw error;
    await hookFailed(tx, ctx.s, ctx.now, p.failed_id, p.name, diagnostics ? new Error(diagnostics.map((d) => d.message).join('; ')) : (error as Error));
  }
}

/** Effects as a maintenance service: passes never overlap; one effect that fails is kept and tried again later. */
export class EffectService implements MaintenanceService {
  readonly name = 'effects';
  private readonly pass = new CoalescedPass<number, MaintenanceContext>((ctx) =>
    applyEffects(ctx, (e, error) =>
      ctx.log.warn(`leader: ${e.kind} effect ${e.id} on workflow ${e.workflow_id} failed (kept, tried again later): ${error.message}`),
    ),
  );

  constructor(readonly intervalMs: number) {}

  runOnce(ctx: MaintenanceContext): Promise<number> {
    return this.pass.run(ctx);
  }

  async settled(): Promise<void> {
    await this.pass.settled();
  }
}
