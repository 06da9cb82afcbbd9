import { errorMessage } from '../core/describe-error.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { lockWorkflows } from '../sql/advance.js';
import { LeaseLost, leaderWrite, type MaintenanceContext, stillLeading } from './service.js';

/** Workflows per transaction, and transactions at once, of a batched pass. */
const BATCH = 500;
const PARALLEL = 3;

/**
 * Runs `step` for each workflow, many per transaction: each transaction locks its workflows (in id order, so
 * transactions never deadlock) before any is worked on, is fenced by the lease, and up to three run at once
 * on Postgres. A transaction that fails is tried again one workflow per transaction, so one workflow that cannot
 * advance holds no other back (its error is logged and it is tried at the next pass). Stops between batches
 * once the leader no longer leads. Returns how many steps did something.
 */
export async function forEachWorkflow(
  ctx: MaintenanceContext,
  ids: readonly string[],
  what: string,
  step: (tx: Queryable, advance: AdvanceContext, id: string) => Promise<boolean>,
): Promise<number> {
  return inBatches(ctx, ids, what, async (tx, advance, chunk) => {
    let n = 0;
    for (const id of chunk) if (await step(tx, advance, id)) n++;
    return n;
  });
}

/** forEachWorkflow with a step that takes a batch's workflows together (set-based statements over all of them). */
export async function inBatches(
  ctx: MaintenanceContext,
  ids: readonly string[],
  what: string,
  step: (tx: Queryable, advance: AdvanceContext, ids: readonly string[]) => Promise<number>,
): Promise<number> {
  const sorted = [...new Set(ids)].sort();
  const chunks: string[][] = [];
  for (let i = 0; i < sorted.length; i += BATCH) chunks.push(sorted.slice(i, i + BATCH));
  const run = (chunk: readonly string[]) =>
    leaderWrite(ctx, async (tx, advance) => {
      await lockWorkflows(tx, ctx.s, chunk);
      return step(tx, advance, chunk);
    });
  let done = 0;
  let next = 0;
  const lane = async () => {
    while (next < chunks.length && stillLeading(ctx)) {
      const chunk = chunks[next++];
      // (each sum after its await: lanes run side by side, and `done += await ...` would read done before it)
      try {
        const n = await run(chunk);
        done += n;
      } catch (error) {
        if (error instanceof LeaseLost || chunk.length === 1) throw error;
        for (const id of chunk) {
          try {
            const n = await run([id]);
            done += n;
          } catch (one) {
            if (one instanceof LeaseLost) throw one;
            ctx.log.warn(`leader: ${what} of workflow ${id} failed: ${errorMessage(one)}`);
          }
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ctx.db.kind === 'postgres' ? PARALLEL : 1, chunks.length) }, lane));
  return done;
}
