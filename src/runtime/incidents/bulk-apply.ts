import type { Queryable } from '../db/types.js';
import { resolveVersion, retryOnCurrent } from '../deploys/upgrades.js';
import { cancelWorkflow } from '../engine/cancel.js';
import type { AdvanceContext } from '../engine/context.js';
import type { RetryMode } from '../engine/decide.js';
import { retryWorkflow } from '../engine/retry.js';
import { emitSignal } from '../engine/signal.js';
import { upgradeWorkflow } from '../engine/upgrade.js';
import { WorkflowNotFoundError } from '../errors.js';
import { workflowVersionRef } from '../sql/workflows.js';
import type { BulkOperation } from '../wire/index.js';
import { OperationInvalidError } from './errors.js';

/**
 * What a bulk operation does to one workflow, in the caller's transaction (the item's outcome is recorded in it
 * too): as the single-workflow command does it. An error the workflow's state explains (not final, finished,
 * not movable) is thrown for the caller to record as the item's failure.
 */
export async function applyItem(q: Queryable, advance: AdvanceContext, op: BulkOperation, workflowId: string): Promise<void> {
  const o = op.options;
  switch (op.action) {
    case 'retry': {
      const how = { mode: o.mode as RetryMode, resetHistory: o.reset_history === true };
      const r = o.on_current === true ? await retryOnCurrent(q, advance, workflowId, how) : await retryWorkflow(q, advance, workflowId, how);
      if (!r) throw new WorkflowNotFoundError(workflowId);
      return;
    }
    case 'cancel': {
      const r = await cancelWorkflow(q, advance, workflowId);
      if (!r.found) throw new WorkflowNotFoundError(workflowId);
      return;
    }
    case 'upgrade': {
      const w = await workflowVersionRef(q, advance.s, workflowId);
      if (!w) throw new WorkflowNotFoundError(workflowId);
      const target = await resolveVersion(q, advance.s, w.name, (o.to as string | null) ?? undefined);
      const moved = await upgradeWorkflow(q, advance, workflowId, target, { cancelRemoved: o.cancel_removed === true, dropEvidence: o.drop_evidence === true });
      if (moved.status === 'skipped' || moved.status === 'finished') throw new OperationInvalidError(`not moved: ${moved.reason ?? moved.status}`);
      return;
    }
    case 'signal': {
      // the operation's name keys the signal: a second emit of it (a rerun) is a replay, not a second signal
      const r = await emitSignal(q, advance, workflowId, o.key as string, o.payload ?? null, { idempotencyKey: `bulk:${op.name}`, source: { bulk: op.name } });
      if (!r) throw new WorkflowNotFoundError(workflowId);
      return;
    }
  }
}
