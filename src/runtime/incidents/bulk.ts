import { canonicalJson } from '../../compiler/canonical-json.js';
import { ulid } from '../../compiler/ulid.js';
import { type ActorOptions, actorOf } from '../core/actor.js';
import { advancing, type RuntimeContext } from '../core/context.js';
import { checkInputSearch } from '../core/sensitive-search.js';
import { assertStorable } from '../core/storable.js';
import { writeAudit } from '../sql/audit.js';
import { cancelOperation, insertOperation, listOperations, loadOperation, operationIds } from '../sql/bulk.js';
import type { BulkAction, BulkCreated, BulkOperation, WorkflowSearch } from '../wire/index.js';
import { checkBulkOptions, checkFilter, OPERATION_NAME, selectWorkflows } from './bulk-select.js';
import { OperationInvalidError, OperationNotFoundError } from './errors.js';

export type { BulkCreated } from '../wire/index.js';
export { type BulkRunOptions, runOperation } from './bulk-run.js';

/** A bulk operation asked for: the action and its options, the selection, its name, pace, who and why. */
export interface BulkRequest extends ActorOptions {
  action: BulkAction;
  /** The list's filters. */
  filter: Omit<WorkflowSearch, 'cursor' | 'limit'>;
  /** CEL over each selected workflow: id, name, state, version, inputs, error, created_at (ISO text). */
  where?: string;
  /** Its name (INC-42), the operation's idempotency key; default a fresh one. */
  name?: string;
  /** Count and show the first ids; record nothing. */
  dryRun?: boolean;
  /** At most this many workflows a second. */
  ratePerS?: number;
  /** retry: mode, reset_history, on_current; upgrade: to, cancel_removed, drop_evidence; signal: key, payload. */
  options?: Record<string, unknown>;
}

const SHOWN_IDS = 10;

/**
 * Makes a bulk operation: its selection frozen (one item per workflow) and recorded with its audit line, or,
 * for a dry run, only counted. A name already taken by the same request is that operation (`existing`: a rerun
 * continues it, touching nothing it acted on); by another request, an OperationInvalidError.
 */
export async function createOperation(ctx: RuntimeContext, runner: string, r: BulkRequest): Promise<BulkCreated> {
  const who = actorOf(r);
  const { action, options } = checkBulkOptions(r.action, r.options ?? {});
  if (action === 'signal') assertStorable(options.payload, 'the payload');
  const name = r.name ?? `bulk-${ulid().toLowerCase()}`;
  if (!OPERATION_NAME.test(name)) throw new OperationInvalidError(`an operation's name is letters, digits and _.:- (at most 128), not ${JSON.stringify(name)}`);
  if (r.ratePerS !== undefined && !(Number.isFinite(r.ratePerS) && r.ratePerS > 0 && r.ratePerS <= 10_000))
    throw new OperationInvalidError(`the rate is a number of workflows a second, more than 0 and at most 10000, not ${r.ratePerS}`);
  checkFilter(r.filter, r.where);
  await checkInputSearch(ctx.db, ctx.s, r.filter);
  const filter = JSON.parse(JSON.stringify({ ...r.filter, ...(r.where !== undefined ? { where: r.where } : {}) })) as Record<string, unknown>;
  const same = (o: BulkOperation) => canonicalJson([o.action, o.options, o.filter]) === canonicalJson([action, options, filter]);
  const existing = await loadOperation(ctx.db, ctx.s, name);
  if (existing) {
    if (!same(existing)) throw new OperationInvalidError(`operation ${name} exists with another action or filter (braid bulk status ${name})`);
    const first = await operationIds(ctx.db, ctx.s, name, SHOWN_IDS);
    return { name, action, total: existing.total, first_ids: first, unevaluated: 0, operation: existing, existing: true };
  }
  const selected = await selectWorkflows(ctx.db, ctx.s, r.filter, r.where);
  const preview = { name, action, total: selected.ids.length, first_ids: selected.ids.slice(0, SHOWN_IDS), unevaluated: selected.unevaluated };
  const described = { ...preview, ...(selected.firstError ? { first_error: selected.firstError } : {}) };
  if (r.dryRun) return described;
  const rate = r.ratePerS ?? null;
  const made = await advancing(ctx, async (tx, { now }) => {
    if (!(await insertOperation(tx, ctx.s, { name, action, options, filter, ...who, rate_per_s: rate, at: now, runner }, selected.ids))) return false;
    const detail = { total: selected.ids.length, filter, options };
    await writeAudit(tx, ctx.s, now, [{ action: `bulk.${action}`, target: name, ...who, detail }]);
    return true;
  });
  // another process made it first, between the look and the insert: it is that one
  if (!made) return createOperation(ctx, runner, r);
  return { ...described, operation: (await loadOperation(ctx.db, ctx.s, name))!, existing: false };
}

export async function getOperation(ctx: RuntimeContext, name: string): Promise<BulkOperation> {
  const op = await loadOperation(ctx.db, ctx.s, name);
  if (!op) throw new OperationNotFoundError(name);
  return op;
}

export function operations(ctx: RuntimeContext): Promise<BulkOperation[]> {
  return listOperations(ctx.db, ctx.s);
}

/** Stops an operation: the workflows it has not acted on yet are left as they are (skipped); audited. */
export async function stopOperation(ctx: RuntimeContext, name: string, o: ActorOptions = {}): Promise<BulkOperation> {
  const who = actorOf(o);
  return advancing(ctx, async (tx, { now }) => {
    const op = await cancelOperation(tx, ctx.s, name, now);
    if (!op) throw new OperationNotFoundError(name);
    await writeAudit(tx, ctx.s, now, [{ action: 'bulk.cancel', target: name, ...who }]);
    return op;
  });
}
