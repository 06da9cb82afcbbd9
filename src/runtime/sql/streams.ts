import type { Scrubbed } from '../core/privacy.js';
import type { Queryable } from '../db/types.js';
import type { StreamChunk } from '../wire/index.js';

/** One batch of a stream's chunks, numbered from `firstSeq` (one statement: an attempt writes its stream alone). */
export async function insertChunks(
  q: Queryable,
  s: string,
  p: { workflowId: string; task: string; name: string; attempt: number; firstSeq: number; chunks: readonly Scrubbed<string>[]; at: Date },
): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.task_streams (workflow_id, task, name, attempt, seq, chunk, at)
     SELECT $1, $2, $3, $4, $5::int + c.n - 1, c.chunk::jsonb, $7 FROM unnest($6::text[]) WITH ORDINALITY AS c(chunk, n)`,
    [p.workflowId, p.task, p.name, p.attempt, p.firstSeq, p.chunks, p.at],
  );
}

/** Chunks after a position (attempt, seq), in order, across attempts. */
export async function chunksAfter(
  q: Queryable,
  s: string,
  p: { workflowId: string; task: string; name: string; attempt: number; seq: number; limit: number },
): Promise<StreamChunk[]> {
  const { rows } = await q.query<StreamChunk>(
    `SELECT attempt, seq, chunk FROM ${s}.task_streams
      WHERE workflow_id = $1 AND task = $2 AND name = $3 AND (attempt, seq) > ($4::int, $5::int)
      ORDER BY attempt, seq LIMIT $6`,
    [p.workflowId, p.task, p.name, p.attempt, p.seq, p.limit],
  );
  return rows;
}

/** The task's streams that have chunks: each one's latest attempt, how many chunks it has, and when the last came. */
export async function taskStreams(q: Queryable, s: string, workflowId: string, task: string): Promise<{ name: string; attempt: number; chunks: number }[]> {
  const { rows } = await q.query<{ name: string; attempt: number; chunks: number }>(
    `SELECT DISTINCT ON (name) name, attempt, count(*) OVER (PARTITION BY name, attempt)::int AS chunks
       FROM ${s}.task_streams WHERE workflow_id = $1 AND task = $2 ORDER BY name, attempt DESC`,
    [workflowId, task],
  );
  return rows;
}

/** The latest attempt of a stream that has chunks (0 when none has). */
export async function latestStreamAttempt(q: Queryable, s: string, p: { workflowId: string; task: string; name: string }): Promise<number> {
  const { rows } = await q.query<{ attempt: number | null }>(
    `SELECT max(attempt) AS attempt FROM ${s}.task_streams WHERE workflow_id = $1 AND task = $2 AND name = $3`,
    [p.workflowId, p.task, p.name],
  );
  return rows[0]?.attempt ?? 0;
}

/** Where a streaming task stands: its state and its current attempt (undefined when there is no such task). */
export async function streamTask(q: Queryable, s: string, workflowId: string, task: string): Promise<{ state: string; attempt: number } | undefined> {
  const { rows } = await q.query<{ state: string; attempt: number }>(`SELECT state, attempt FROM ${s}.task_view WHERE workflow_id = $1 AND name = $2`, [
    workflowId,
    task,
  ]);
  return rows[0];
}

/** Forgets a task's chunks of attempts before `attempt` (a new attempt's stream keeps one attempt's before it). */
export async function forgetStreamsBefore(q: Queryable, s: string, workflowId: string, task: string, attempt: number): Promise<void> {
  await q.query(`DELETE FROM ${s}.task_streams WHERE workflow_id = $1 AND task = $2 AND attempt < $3`, [workflowId, task, attempt]);
}
