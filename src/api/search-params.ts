/**
 * The workflow search (WorkflowSearch) as the API's query string: written by the API client, read (and checked)
 * by the server. `input` repeats, each `PATH=VALUE`.
 */
import { WORKFLOW_STATES, type WorkflowSearch } from '../runtime/wire/index.js';

/** A search that the query cannot hold, said as the API says a bad request. */
export class SearchParamError extends Error {
  override name = 'SearchParamError';
}

const TIMES = [
  ['createdAfter', 'created_after'],
  ['createdBefore', 'created_before'],
  ['finalizedAfter', 'finalized_after'],
  ['finalizedBefore', 'finalized_before'],
] as const;

export function searchToParams(f: WorkflowSearch): URLSearchParams {
  const q = new URLSearchParams();
  if (f.state !== undefined) q.set('state', f.state);
  if (f.name !== undefined) q.set('name', f.name);
  if (f.version !== undefined) q.set('version', f.version);
  if (f.idPrefix !== undefined) q.set('id_prefix', f.idPrefix);
  for (const i of f.inputs ?? []) q.append('input', `${i.path}=${i.value}`);
  for (const [key, param] of TIMES) if (f[key] !== undefined) q.set(param, f[key]);
  if (f.error !== undefined) q.set('error', f.error);
  if (f.topLevel) q.set('top_level', 'true');
  if (f.parentId !== undefined) q.set('parent_id', f.parentId);
  if (f.cursor !== undefined) q.set('cursor', f.cursor);
  if (f.limit !== undefined) q.set('limit', String(f.limit));
  return q;
}

/** `customer_id=c1` -> { path, value }: a dotted path of names, then the value as written. */
export function inputFilter(text: string): { path: string; value: string } {
  const at = text.indexOf('=');
  const path = at < 0 ? '' : text.slice(0, at);
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(path) || path.length > 200)
    throw new SearchParamError(
      `an input filter is PATH=VALUE, PATH a dotted name such as customer_id or customer.id, not ${JSON.stringify(text.slice(0, 80))}`,
    );
  return { path, value: text.slice(at + 1) };
}

function time(text: string, param: string): string {
  if (!/^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?)?$/.test(text) || Number.isNaN(Date.parse(text)))
    throw new SearchParamError(`"${param}" is an ISO 8601 date or time, such as 2026-01-31 or 2026-01-31T12:00:00Z`);
  return new Date(text).toISOString();
}

function short(text: string | null, param: string, max = 200): string | undefined {
  if (text === null || text === '') return undefined;
  if (text.length > max) throw new SearchParamError(`"${param}" is at most ${max} characters`);
  return text;
}

export function searchFromParams(q: URLSearchParams): Omit<WorkflowSearch, 'limit'> {
  const state = q.get('state') ?? undefined;
  if (state !== undefined && !(WORKFLOW_STATES as readonly string[]).includes(state))
    throw new SearchParamError('"state" is running, completed, failed or cancelled');
  const inputs = q.getAll('input');
  if (inputs.length > 10) throw new SearchParamError('at most 10 "input" filters');
  const topLevel = q.get('top_level');
  if (topLevel !== null && topLevel !== 'true' && topLevel !== 'false') throw new SearchParamError('"top_level" is true or false');
  const out: Omit<WorkflowSearch, 'limit'> = {
    state: state as WorkflowSearch['state'],
    name: short(q.get('name'), 'name'),
    version: short(q.get('version'), 'version', 64),
    idPrefix: short(q.get('id_prefix'), 'id_prefix', 128),
    inputs: inputs.length > 0 ? inputs.map(inputFilter) : undefined,
    error: short(q.get('error'), 'error'),
    topLevel: topLevel === 'true' || undefined,
    parentId: short(q.get('parent_id'), 'parent_id', 128),
    cursor: q.get('cursor') ?? undefined,
  };
  for (const [key, param] of TIMES) {
    const v = q.get(param);
    if (v !== null && v !== '') out[key] = time(v, param);
  }
  return out;
}
