import { program } from '../../compiler/cel/evaluate.js';
import type { Queryable } from '../db/types.js';
import { evaluateCondition } from '../engine/conditions.js';
import { type SelectedRow, selectPage } from '../sql/bulk.js';
import { BULK_ACTIONS, type BulkAction, DEFAULT_RETRY_MODE, RETRY_MODES, type RetryMode, type WorkflowSearch } from '../wire/index.js';
import { checkText, OperationInvalidError } from './errors.js';

/** The most workflows one operation selects: a larger incident is split by its filters (by time, by name). */
export const MAX_SELECTION = 100_000;

/** A bulk operation's name: its idempotency key (INC-42). */
export const OPERATION_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** What `--where` reads of each workflow, as CEL variables. */
export function whereContext(r: SelectedRow): Record<string, unknown> {
  return {
    id: r.id,
    name: r.name,
    state: r.state,
    version: r.version,
    inputs: r.inputs ?? {},
    error: r.error ?? '',
    created_at: new Date(r.created_at).toISOString(),
  };
}

/** The options of each action, checked: what an item needs to act (retry's mode, upgrade's target, signal's key and payload). */
export function checkBulkOptions(action: unknown, o: Record<string, unknown>): { action: BulkAction; options: Record<string, unknown> } {
  if (typeof action !== 'string' || !BULK_ACTIONS.includes(action as BulkAction))
    throw new OperationInvalidError(`a bulk operation is one of ${BULK_ACTIONS.join(', ')}, not ${JSON.stringify(action)}`);
  const bool = (k: string) => {
    if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new OperationInvalidError(`${k} is true or false`);
    return o[k] === true;
  };
  switch (action as BulkAction) {
    case 'retry': {
      const mode = o.mode ?? DEFAULT_RETRY_MODE;
      if (!RETRY_MODES.includes(mode as RetryMode))
        throw new OperationInvalidError(`mode is ${RETRY_MODES.join(', ')} (default ${DEFAULT_RETRY_MODE}), not ${JSON.stringify(mode)}`);
      return { action: 'retry', options: { mode, reset_history: bool('reset_history'), on_current: bool('on_current') } };
    }
    case 'cancel':
      return { action: 'cancel', options: {} };
    case 'upgrade':
      return {
        action: 'upgrade',
        options: { to: checkText('to', o.to, 64, false), cancel_removed: bool('cancel_removed'), drop_evidence: bool('drop_evidence') },
      };
    case 'signal':
      return { action: 'signal', options: { key: checkText('the signal key', o.key, 128, true), payload: o.payload ?? null } };
  }
}

/** The search's filters as given, with at least one: an operation over every workflow is never made by accident. */
export function checkFilter(filter: Omit<WorkflowSearch, 'cursor' | 'limit'>, where: string | undefined): void {
  const given = Object.entries(filter).filter(([, v]) => v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0));
  if (given.length === 0 && where === undefined)
    throw new OperationInvalidError(
      'a bulk operation needs a filter (--name, --state, --version, --input, --error, --created-after/before, --id-prefix, --where)',
    );
  if (where !== undefined) {
    checkText('--where', where, 4000, true);
    try {
      program(where);
    } catch (error) {
      throw new OperationInvalidError(`--where is not a CEL expression: ${String((error as Error).message).split('\n')[0]}`);
    }
  }
}

/** The workflows an operation selects, in id order: the search's, those `--where` holds for; how many it could not evaluate, and why first. */
export async function selectWorkflows(
  q: Queryable,
  s: string,
  filter: Omit<WorkflowSearch, 'cursor' | 'limit'>,
  where: string | undefined,
): Promise<{ ids: string[]; unevaluated: number; firstError?: string }> {
  const ids: string[] = [];
  let unevaluated = 0;
  let firstError: string | undefined;
  for (let after = ''; ; ) {
    const page = await selectPage(q, s, filter, after, 1000);
    for (const r of page) {
      if (where !== undefined) {
        const outcome = evaluateCondition(where, whereContext(r));
        if ('error' in outcome) {
          unevaluated++;
          firstError ??= `${r.id}: ${outcome.error.replace(/^when: /, '')}`;
          continue;
        }
        if (!outcome.run) continue;
      }
      ids.push(r.id);
      if (ids.length > MAX_SELECTION)
        throw new OperationInvalidError(`the filter selects more than ${MAX_SELECTION} workflows: narrow it (by --created-after/before, --name, --where)`);
    }
    if (page.length < 1000) break;
    after = page[page.length - 1].id;
  }
  return { ids, unevaluated, firstError };
}
