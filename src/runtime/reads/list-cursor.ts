import type { Queryable } from '../db/types.js';
import { InvalidCursorError } from '../errors.js';
import { listWorkflows, type WorkflowListFilter, type WorkflowSummary } from '../sql/workflows.js';
import type { WorkflowSearch } from '../wire/index.js';

/** The workflow list's cursor: the last row's exact created_at text and id, opaque to clients. */
export function encodeCursor(row: { cursor_at: string; id: string }): string {
  return Buffer.from(JSON.stringify([row.cursor_at, row.id])).toString('base64url');
}

export function decodeCursor(cursor: string): { created_at: string; id: string } {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof created_at === 'string' && typeof id === 'string' && /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d{1,6})?([+-]\d\d(:?\d\d)?|Z)?$/.test(created_at))
      return { created_at, id };
  } catch {
    /* falls through */
  }
  throw new InvalidCursorError();
}

/** One page of the workflow list (newest first): at most `limit` (1 to 500, default 50), and the next page's cursor. */
export async function listPage(q: Queryable, s: string, filter: WorkflowSearch): Promise<{ workflows: WorkflowSummary[]; next_cursor: string | null }> {
  const { cursor, limit: asked, ...search } = filter;
  const limit = Math.min(Math.max(asked ?? 50, 1), 500);
  const f: WorkflowListFilter = { ...search, after: cursor ? decodeCursor(cursor) : undefined, limit: limit + 1 };
  const rows = await listWorkflows(q, s, f);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    workflows: page.map(({ cursor_at: _, ...w }) => w),
    next_cursor: rows.length > limit && last ? encodeCursor(last) : null,
  };
}
