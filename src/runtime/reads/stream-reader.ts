/**
 * Reading a task's output stream: its chunks in order from a position, across attempts (a reader that started
 * on one attempt goes on into the next). Following, it polls until the task has ended and every chunk is read:
 * chunks are stored before an attempt's end commits, so once the task is seen ended nothing more comes.
 */

import type { Queryable } from '../db/types.js';
import { TaskNotFoundError } from '../errors.js';
import { chunksAfter, streamTask } from '../sql/streams.js';
import type { StreamChunk, StreamPosition } from '../wire/index.js';

export interface StreamReadOptions {
  /** Read after this position (a Last-Event-ID); default: from the start of the task's current attempt. */
  after?: StreamPosition;
  /** Keep reading until the task has ended (default false: what is stored now). */
  follow?: boolean;
  /** How often a follower looks for new chunks (default 100 ms). */
  pollMs?: number;
  signal?: AbortSignal;
}

const PAGE = 1000;
const FINAL = new Set(['completed', 'cancelled', 'discarded', 'skipped']);

export async function* readStream(
  q: Queryable,
  s: string,
  at: { workflowId: string; task: string; name: string },
  o: StreamReadOptions = {},
): AsyncGenerator<StreamChunk> {
  const first = await streamTask(q, s, at.workflowId, at.task);
  if (!first) throw new TaskNotFoundError(at.workflowId, at.task);
  let pos: StreamPosition = o.after ?? { attempt: Math.max(first.attempt, 1), seq: 0 };
  while (!o.signal?.aborted) {
    // the state is read before the chunks: an end seen here has all its chunks stored already
    const task = o.follow ? await streamTask(q, s, at.workflowId, at.task) : undefined;
    const rows = await chunksAfter(q, s, { ...at, attempt: pos.attempt, seq: pos.seq, limit: PAGE });
    for (const row of rows) {
      yield row;
      pos = row;
    }
    if (rows.length === PAGE) continue;
    if (!o.follow || !task || FINAL.has(task.state)) return;
    await pause(o.pollMs ?? 100, o.signal);
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
