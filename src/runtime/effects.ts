/**
 * Applies effects that cross workflows (SPEC "Scale"): each is a row keyed by the workflow it acts on and
 * is applied in a transaction of its own. A child start inserts the child; a cancel cancels it; a
 * finalization re-evaluates, one waiting workflow per transaction, the waits registered on it.
 */
import { compile } from '../compiler/instantiate.js';
import type { Database, Queryable } from './db/types.js';
import type { AdvanceContext } from './sql/advance.js';
import { lockWorkflows } from './sql/advance.js';
import { insertPlan } from './sql/insert.js';
import { cancelWorkflow } from './sql/workflows.js';
import { evaluateWaits } from './waits.js';

interface EffectRow {
  workflow_id: string;
  id: string;
  kind: 'start' | 'cancel' | 'finalized';
  payload: StartPayload | Record<string, never>;
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

/** Applies pending effects, oldest first, in bounded batches; returns how many were applied. */
export async function applyEffects(db: Database, context: (tx: Queryable) => Promise<AdvanceContext>, s: string, limit = 200): Promise<number> {
  let applied = 0;
  for (;;) {
    const { rows } = await db.query<EffectRow>(`SELECT workflow_id, id::text AS id, kind, payload FROM ${s}.effects ORDER BY id LIMIT $1`, [limit]);
    for (const e of rows) if (await applyEffect(db, context, s, e)) applied++;
    if (rows.length < limit) return applied;
  }
}

async function applyEffect(db: Database, context: (tx: Queryable) => Promise<AdvanceContext>, s: string, e: EffectRow): Promise<boolean> {
  if (e.kind === 'finalized') {
    // waits are idempotent to evaluate again, so a crash half-way only repeats some evaluations
    const { rows } = await db.query<{ workflow_id: string; task: string }>(`SELECT workflow_id, task FROM ${s}.workflow_waiters WHERE awaited_id = $1`, [e.workflow_id]);
    for (const waiting of new Set(rows.map((r) => r.workflow_id))) {
      await db.transaction(async (tx) => {
        const ctx = await context(tx);
        await lockWorkflows(tx, s, [waiting]);
        await evaluateWaits(tx, ctx, waiting, { names: rows.filter((r) => r.workflow_id === waiting).map((r) => r.task) });
      });
    }
    const { rowCount } = await db.query(`DELETE FROM ${s}.effects WHERE workflow_id = $1 AND id = $2`, [e.workflow_id, e.id]);
    return rowCount > 0;
  }
  return db.transaction(async (tx) => {
    const { rows } = await tx.query(`SELECT 1 FROM ${s}.effects WHERE workflow_id = $1 AND id = $2 FOR UPDATE SKIP LOCKED`, [e.workflow_id, e.id]);
    if (rows.length === 0) return false;
    const ctx = await context(tx);
    if (e.kind === 'cancel') await cancelWorkflow(tx, ctx, e.workflow_id);
    else await startChild(tx, ctx, s, e.workflow_id, e.payload as StartPayload);
    await tx.query(`DELETE FROM ${s}.effects WHERE workflow_id = $1 AND id = $2`, [e.workflow_id, e.id]);
    return true;
  });
}

/** Inserts a child workflow, unless it exists already or its parent is being cancelled. */
async function startChild(tx: Queryable, ctx: AdvanceContext, s: string, id: string, p: StartPayload): Promise<void> {
  const { rows: existing } = await tx.query(`SELECT 1 FROM ${s}.workflows WHERE id = $1`, [id]);
  if (existing.length > 0) return;
  const { rows: parent } = await tx.query<{ cancel_requested: boolean }>(`SELECT cancel_requested FROM ${s}.workflows WHERE id = $1`, [p.parent_id]);
  if (parent.length === 0 || parent[0].cancel_requested) return;
  const def = await ctx.definitions.get(tx, p.name, p.definition_hash);
  const plan = compile(def, p.inputs, { id, now: new Date(p.requested_at) });
  plan.workflow.definition.hash = p.definition_hash;
  await insertPlan(tx, ctx, plan, { parentId: p.parent_id, group: p.group });
}
