import { isCallerError } from '../../error-codes.js';
import { advanceIn, clockNow, type RuntimeContext } from '../core/context.js';
import { writeAudit } from '../sql/audit.js';
import { claimItem, loadOperation, orphanedOperations, recordItem, releaseOperation, takeOperation } from '../sql/bulk.js';
import { rollbackTo, savepoint } from '../sql/savepoints.js';
import { isLockTimeout, setLockTimeout } from '../sql/session.js';
import type { BulkOperation } from '../wire/index.js';
import { applyItem } from './bulk-apply.js';
import { OperationNotFoundError } from './errors.js';

/** How long a runner may stay silent before another (the leader, a rerun) continues its operation. */
export const RUNNER_STALE_MS = 5000;

export interface BulkRunOptions {
  /** Called after each item (and while another runner acts), with the operation as it stands. */
  onProgress?: (op: BulkOperation) => void;
  /** Stops the run between items (the operation stays running for another to continue). */
  signal?: AbortSignal;
  /** At most this many items this call (the leader's bounded pass); the rest is left to the next. */
  maxItems?: number;
  /** When another runner acts on it: follow it to its end (the CLI), or return at once (the leader). */
  follow?: boolean;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

/**
 * Acts on an operation's items in order, one transaction each (the action and the item's outcome together, so
 * a crash at any point and a rerun act on no workflow twice), at most `rate_per_s` a second. Only one runner
 * acts at a time: one that finds another acting follows its progress until it ends or goes silent, then takes
 * over. The operation as it stands when the call ends.
 */
export async function runOperation(ctx: RuntimeContext, runner: string, name: string, o: BulkRunOptions = {}): Promise<BulkOperation> {
  let op = await loadOperation(ctx.db, ctx.s, name);
  if (!op) throw new OperationNotFoundError(name);
  const started = Date.now();
  let acted = 0;
  const limit = Math.min(o.maxItems ?? Number.POSITIVE_INFINITY, op.total);
  while (op.state === 'running' && acted < limit && !o.signal?.aborted) {
    const now = await clockNow(ctx);
    // the mark renewed reads the operation as it stands (its counts after the last item)
    const taken = await takeOperation(ctx.db, ctx.s, name, runner, now, new Date(now.getTime() - RUNNER_STALE_MS));
    op = taken ?? (await loadOperation(ctx.db, ctx.s, name))!;
    o.onProgress?.(op);
    if (!taken) {
      if (!o.follow || op.state !== 'running') break;
      await sleep(500, o.signal);
      continue;
    }
    // the pace: item n of this run not before n / rate seconds after its start
    const due = op.rate_per_s ? started + (acted * 1000) / op.rate_per_s : 0;
    if (due > Date.now()) await sleep(Math.min(due - Date.now(), 1000), o.signal);
    else if (await actOnNext(ctx, runner, op)) acted++;
    else break;
  }
  await releaseOperation(ctx.db, ctx.s, name, runner);
  const ended = (await loadOperation(ctx.db, ctx.s, name))!;
  o.onProgress?.(ended);
  return ended;
}

/** Acts on the next item no runner holds, in one transaction with its outcome; false when none is left. */
async function actOnNext(ctx: RuntimeContext, runner: string, op: BulkOperation): Promise<boolean> {
  return ctx.db.transaction(async (tx) => {
    const item = await claimItem(tx, ctx.s, op.name);
    if (!item) return false;
    await setLockTimeout(tx, ctx.lockTimeoutMs);
    const advance = await advanceIn(ctx, tx);
    await savepoint(tx, 'bulk_item');
    let error: string | undefined;
    try {
      await applyItem(tx, advance, op, item.workflow_id);
    } catch (e) {
      // the workflow's state refused it (or another transaction held it too long): recorded, and the run goes on
      if (!isCallerError(e) && !isLockTimeout(e)) throw e;
      await rollbackTo(tx, 'bulk_item');
      error = isLockTimeout(e) ? `workflow ${item.workflow_id} was busy past the lock timeout` : (e as Error).message;
    }
    await recordItem(tx, ctx.s, { name: op.name, seq: item.seq, outcome: error ? 'failed' : 'done', error, at: advance.now, runner });
    // the workflow's history says which operation acted on it (or tried to), by whom and why
    const line = { action: `bulk.${op.action}`, target: op.name, workflow_id: item.workflow_id, actor: op.actor, reason: op.reason };
    await writeAudit(tx, ctx.s, advance.now, [{ ...line, detail: error ? { outcome: 'failed', error } : { outcome: 'done' } }]);
    return true;
  });
}

/** The leader's pass: operations whose runner went silent (a CLI killed mid-way) are continued, a bounded number of items each. */
export async function continueOrphaned(ctx: RuntimeContext, runner: string): Promise<number> {
  const now = await clockNow(ctx);
  let acted = 0;
  for (const name of await orphanedOperations(ctx.db, ctx.s, new Date(now.getTime() - RUNNER_STALE_MS), 3)) {
    const before = await loadOperation(ctx.db, ctx.s, name);
    const maxItems = before?.rate_per_s ? Math.max(1, Math.floor(before.rate_per_s)) : 200;
    const after = await runOperation(ctx, runner, name, { maxItems });
    acted += after.done + after.failed - ((before?.done ?? 0) + (before?.failed ?? 0));
  }
  return acted;
}
