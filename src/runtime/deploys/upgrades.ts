import type { CompileLimits } from '../../compiler/compile-error.js';
import { type ActorOptions, actorOf } from '../core/actor.js';
import { type RuntimeContext, workflowWrite } from '../core/context.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { type RetryMode, retrySelection } from '../engine/decide.js';
import { type RetryResult, retryWorkflow } from '../engine/retry.js';
import { type UpgradeOutcome, upgradeWorkflow } from '../engine/upgrade.js';
import { DefinitionNotFoundError, WorkflowBusyError, WorkflowNotMovableError } from '../errors.js';
import { lockWorkflows } from '../sql/advance.js';
import { currentDefinition, definitionsByPrefix, type StoredDefinition } from '../sql/definitions.js';
import { retryCandidates } from '../sql/retry.js';
import { upgradeCandidates } from '../sql/upgrade.js';
import { workflowVersionRef } from '../sql/workflows.js';
import { unknownWorkflow } from './registry.js';

export type { UpgradeOutcome };

/** Which workflows move where: by default every running workflow of the name on an older version, to the current one. */
export interface UpgradeRequest extends ActorOptions {
  /** Only workflows on this version (a hash or a unique prefix). */
  from?: string;
  /** The version to move to (a hash or a unique prefix; default the current one). */
  to?: string;
  /** Only these workflows. */
  ids?: readonly string[];
  /** Decide and report, write nothing. */
  dryRun?: boolean;
  /** Cancel removed tasks that have not ended (a running one still refuses) instead of refusing the move. */
  cancelRemoved?: boolean;
  /** Move workflows whose active waits would lose evidence (signals that stop counting, timers re-anchored). */
  dropEvidence?: boolean;
}

export interface UpgradeReport {
  name: string;
  /** The version moved to. */
  to: string;
  results: UpgradeOutcome[];
}

/** How many candidates are read at a time: each moves in its own transaction. */
const PAGE = 200;

/** One version of a name by hash or unique prefix; the current one when none is given. */
export async function resolveVersion(q: Queryable, s: string, name: string, hash: string | undefined): Promise<StoredDefinition> {
  if (hash === undefined) {
    const current = await currentDefinition(q, s, name);
    if (!current) throw await unknownWorkflow(q, s, name);
    return current;
  }
  const found = /^[0-9a-f]{1,64}$/.test(hash) ? await definitionsByPrefix(q, s, name, hash) : [];
  if (found.length !== 1)
    throw new DefinitionNotFoundError(
      name,
      hash,
      found.map((d) => d.hash),
    );
  return found[0];
}

/**
 * Moves running workflows of `name` to a version (braid upgrade), each in its own transaction under its
 * lock, or not at all with the reason: a crash mid-way leaves every workflow on exactly one version.
 */
export async function upgradeWorkflows(ctx: RuntimeContext, name: string, request: UpgradeRequest, limits?: Partial<CompileLimits>): Promise<UpgradeReport> {
  const target = await resolveVersion(ctx.db, ctx.s, name, request.to);
  const from = request.from === undefined ? undefined : (await resolveVersion(ctx.db, ctx.s, name, request.from)).hash;
  const results: UpgradeOutcome[] = [];
  const who = actorOf(request);
  // a workflow another transaction holds past the lock timeout is left for a later run, said as its reason
  const move = (id: string, scanned = false) =>
    workflowWrite(ctx, undefined, id, (tx, a) =>
      upgradeWorkflow(tx, a, id, target, {
        dryRun: request.dryRun,
        limits,
        scanned,
        cancelRemoved: request.cancelRemoved,
        dropEvidence: request.dropEvidence,
        who,
      }),
    ).catch((error: unknown) => {
      if (error instanceof WorkflowBusyError) return { id, from: null, to: target.hash, status: 'skipped' as const, reason: error.message };
      throw error;
    });
  if (request.ids !== undefined) {
    for (const id of [...new Set(request.ids)]) {
      const w = from === undefined ? undefined : await workflowVersionRef(ctx.db, ctx.s, id);
      if (w && w.definition_hash !== from)
        results.push({
          id,
          from: w.definition_hash,
          to: target.hash,
          status: 'skipped',
          reason: `it runs version ${w.definition_hash.slice(0, 12)}, not --from ${from!.slice(0, 12)}`,
        });
      else results.push(await move(id));
    }
    return { name, to: target.hash, results };
  }
  for (let after = ''; ; ) {
    const page = await upgradeCandidates(ctx.db, ctx.s, { name, to: target.hash, from, after, limit: PAGE });
    // each was running when listed; one that ends before its turn (workers keep working) is finished, not refused
    for (const c of page) results.push(await move(c.id, true));
    if (page.length < PAGE) break;
    after = page[page.length - 1].id;
  }
  return { name, to: target.hash, results };
}

/**
 * A retry on the current version (retry --on-current), in the caller's transaction: the tasks the mode runs
 * again take the current definition (with what the move renamed, and the tasks it added), then the retry runs
 * them. A workflow already on the current version is retried as it is.
 */
export async function retryOnCurrent(
  q: Queryable,
  ctx: AdvanceContext,
  id: string,
  options: { mode: RetryMode; resetHistory: boolean },
): Promise<RetryResult | undefined> {
  if (!(await lockWorkflows(q, ctx.s, [id])).has(id)) return undefined;
  const w = await workflowVersionRef(q, ctx.s, id);
  if (!w) return undefined;
  const current = await currentDefinition(q, ctx.s, w.name);
  if (!current || current.hash === w.definition_hash || w.state === 'running') return retryWorkflow(q, ctx, id, options);
  const rerun = retrySelection(await retryCandidates(q, ctx.s, id), options.mode);
  const moved = await upgradeWorkflow(q, ctx, id, current, { rerun });
  if (moved.status !== 'moved') throw new WorkflowNotMovableError(id, current.hash, moved.reason ?? moved.status);
  const renamed = new Map(Object.entries(moved.renamed ?? {}));
  const deleted = new Set(moved.deleted);
  const selection = new Set([...[...rerun].filter((n) => !deleted.has(n)).map((n) => renamed.get(n) ?? n), ...(moved.inserted ?? [])]);
  return retryWorkflow(q, ctx, id, { ...options, selection });
}
