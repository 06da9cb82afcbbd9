import type { Scrubbed } from '../core/privacy.js';
import type { Queryable } from '../db/types.js';
import type { LogLine, LogPage } from '../wire/index.js';

/** A line as written: the task and attempt it belongs to, and what it says (scrubbed of its attempt's sensitive values). */
export type NewLogLine = Omit<LogLine, 'id' | 'at' | 'message' | 'fields'> & {
  workflow_id: string;
  at: Date;
  message: Scrubbed<string>;
  fields: Scrubbed<Record<string, unknown>> | null;
};

/** Stores lines in one statement, in the order given (their ids follow it): the protocol's log(). */
export async function insertLogLines(q: Queryable, s: string, lines: readonly NewLogLine[]): Promise<void> {
  if (lines.length === 0) return;
  await q.query(`SELECT ${s}.log($1)`, [JSON.stringify(lines)]);
}

/** A workflow's lines in the order they were stored, after a cursor, optionally of one task (and attempt). */
export async function listLogLines(
  q: Queryable,
  s: string,
  p: { workflowId: string; task?: string; attempt?: number; after?: string; limit: number },
): Promise<LogPage> {
  const { rows } = await q.query<LogLine>(
    `SELECT id::text AS id, task, attempt, at, level, source, message, fields FROM ${s}.task_logs
      WHERE workflow_id = $1 AND ($2::text IS NULL OR task = $2) AND ($3::int IS NULL OR attempt = $3) AND ($4::bigint IS NULL OR id > $4)
      ORDER BY task_logs.id LIMIT $5`,
    [p.workflowId, p.task ?? null, p.attempt ?? null, p.after ?? null, p.limit + 1],
  );
  const has_more = rows.length > p.limit;
  const lines = rows.slice(0, p.limit);
  return { lines, next_after: lines.length > 0 ? lines[lines.length - 1].id : (p.after ?? null), has_more };
}

/** How a task that needs a data key its workers lack is said: on its attempt by the worker, and by braid status. */
export const KEY_WAIT_PREFIX = 'waits for a worker with data key';
