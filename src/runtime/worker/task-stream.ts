/**
 * ctx.stream(NAME): the chunks a handler writes while it runs, stored in order for readers to follow live.
 * A write is checked at once (declared stream, the chunk's schema, storable JSON, the stream's bounds) and then
 * queued: chunks are stored in batches (every few milliseconds, or as soon as many wait), so a handler writing
 * thousands of small chunks pays a statement per batch, not per chunk; a writer far ahead of the database
 * waits. The attempt's end stores what is queued before its completion commits: a reader that sees the task
 * ended has seen every chunk.
 */
import { describeOutputProblems, outputProblems } from '../../compiler/returns.js';
import { errorMessage } from '../core/describe-error.js';
import { type Scrubbed, Secrets, scrubJsonText } from '../core/privacy.js';
import { findUnstorable } from '../core/storable.js';
import type { Queryable } from '../db/types.js';
import type { DefinitionCache } from '../engine/definition-cache.js';
import { forgetStreamsBefore, insertChunks } from '../sql/streams.js';
import type { Clock } from '../sql/time.js';
import { workflowVersionRef } from '../sql/workflows.js';
import { NonRetryableError } from './task-errors.js';

export interface StreamWriter<Chunk = unknown> {
  /** Checks and queues a chunk: rejects (and keeps nothing) for a chunk its schema refuses or past the stream's bounds. */
  write(chunk: Chunk): Promise<void>;
  /** Resolves once every chunk written so far is stored. */
  flush(): Promise<void>;
}

/** A stream's bounds per attempt: its bytes of JSON, its chunks, one chunk's bytes. */
export const STREAM_LIMITS = { maxBytes: 16 * 1024 * 1024, maxChunks: 100_000, maxChunkBytes: 1024 * 1024 } as const;

/** Why a write was refused: nothing of it was kept; the stream goes on (a limit reached refuses every later write). */
export class StreamWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StreamWriteError';
  }
}

/**
 * A stream past its bounds: the attempt ends, not retried (code stream_too_large), even when the handler catches
 * the write's error: another attempt would write as much again, and keep as much again.
 */
export class StreamTooLargeError extends NonRetryableError {
  constructor(message: string) {
    super(message, { code: 'stream_too_large' });
    this.name = 'StreamTooLargeError';
  }
}

const BATCH_CHUNKS = 500;
const BATCH_BYTES = 256 * 1024;
const FLUSH_AFTER_MS = 15;
/** Chunks queued past this, a write waits for the batches before it. */
const HIGH_WATER = 5000;

interface StreamEnv {
  db: Queryable;
  s: string;
  definitions: DefinitionCache;
  clock?: Clock;
}

/** One attempt's streams, made on its handler's first ctx.stream(). */
export class AttemptStreams {
  private readonly open = new Map<string, OneStream>();
  private declared?: Promise<Record<string, { schema?: Record<string, unknown> }>>;

  constructor(
    private readonly env: StreamEnv,
    readonly task: { workflow_id: string; name: string; template: string; attempt: number },
    /** The attempt's sensitive values in clear: a chunk never stores one. */
    readonly secrets = Secrets.none,
  ) {}

  stream(name: string): StreamWriter {
    let s = this.open.get(name);
    if (!s) this.open.set(name, (s = new OneStream(this, this.env, String(name))));
    return s;
  }

  /**
   * The task's declared streams (its definition's `streams:`), read once per attempt; with them, the streams of
   * attempts before the one before this are forgotten (a task keeps this attempt's and the last one's: the one
   * a reader may still follow).
   */
  declarations(): Promise<Record<string, { schema?: Record<string, unknown> }>> {
    this.declared ??= (async () => {
      const t = this.task;
      if (t.attempt > 2) await forgetStreamsBefore(this.env.db, this.env.s, t.workflow_id, t.name, t.attempt - 1);
      const ref = await workflowVersionRef(this.env.db, this.env.s, this.task.workflow_id);
      const def = ref && (await this.env.definitions.find(this.env.db, ref.name, ref.definition_hash));
      return def?.tasks.find((t) => t.name === this.task.template)?.streams ?? {};
    })();
    return this.declared;
  }

  /**
   * At the attempt's end: what is queued is stored (a failure to store is the attempt's), and later writes
   * refused. `tx`: the handler's own transaction, still open, through which the rest goes (on the embedded
   * database, which runs one transaction at a time, a batch sent beside it waits for it to commit).
   */
  async close(tx?: Queryable): Promise<void> {
    const errors: string[] = [];
    for (const s of this.open.values()) {
      const error = await s.close(tx);
      if (error) errors.push(error);
    }
    if (errors.length > 0) throw new Error(`its stream could not be stored: ${errors.join('; ')}`);
    const full = [...this.open.values()].find((s) => s.full);
    if (full) throw new StreamTooLargeError(full.full!);
  }
}

class OneStream implements StreamWriter {
  private queued: Scrubbed<string>[] = [];
  private queuedBytes = 0;
  private nextSeq = 1;
  private bytes = 0;
  private chunks = 0;
  private storing: Promise<void> = Promise.resolve();
  private failed?: string;
  private closed = false;
  /** Why the stream is full (its bounds reached): the attempt ends stream_too_large. */
  full?: string;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly owner: AttemptStreams,
    private readonly env: StreamEnv,
    private readonly name: string,
  ) {}

  async write(chunk: unknown): Promise<void> {
    const what = `stream "${this.name}" of task "${this.owner.task.name}"`;
    if (this.closed) throw new StreamWriteError(`${what}: the attempt has ended, so its stream is closed`);
    if (this.failed) throw new StreamWriteError(`${what} could not be stored: ${this.failed}`);
    const declared = await this.owner.declarations();
    if (!Object.hasOwn(declared, this.name))
      throw new StreamWriteError(
        `task "${this.owner.task.name}" declares no stream "${this.name}" (its streams: ${Object.keys(declared).join(', ') || 'none'})`,
      );
    const value = chunk === undefined ? null : chunk;
    const schema = declared[this.name].schema;
    const problems = schema ? outputProblems(schema, value) : [];
    if (problems.length > 0) throw new StreamWriteError(`${what}: the chunk breaks its schema: ${describeOutputProblems(problems)}`);
    const text = storableJson(value, what, this.owner.secrets);
    const size = Buffer.byteLength(text);
    if (size > STREAM_LIMITS.maxChunkBytes) throw new StreamWriteError(`${what}: a chunk of ${size} bytes is over the most one may be (1 MiB)`);
    if (this.full) throw new StreamTooLargeError(this.full);
    if (this.bytes + size > STREAM_LIMITS.maxBytes || this.chunks + 1 > STREAM_LIMITS.maxChunks) {
      this.full = `${what} is over its bounds (an attempt's stream keeps at most 16 MiB and 100,000 chunks): the attempt ends, not retried`;
      throw new StreamTooLargeError(this.full);
    }
    this.bytes += size;
    this.chunks++;
    this.queued.push(text);
    this.queuedBytes += size;
    if (this.queued.length >= BATCH_CHUNKS || this.queuedBytes >= BATCH_BYTES) this.store();
    else this.timer ??= setTimeout(() => this.store(), FLUSH_AFTER_MS);
    if (this.queued.length >= HIGH_WATER) await this.storing;
  }

  async flush(): Promise<void> {
    this.store();
    await this.storing;
    if (this.failed) throw new StreamWriteError(`stream "${this.name}" of task "${this.owner.task.name}" could not be stored: ${this.failed}`);
  }

  /** Stores what is queued and refuses later writes; returns why storing failed, if it did. */
  async close(tx?: Queryable): Promise<string | undefined> {
    this.closed = true;
    if (tx) {
      clearTimeout(this.timer);
      const batch = this.batch();
      if (batch && !this.failed) await insertChunks(tx, this.env.s, batch).catch((error: unknown) => (this.failed ??= errorMessage(error).split('\n')[0]));
    } else {
      this.store();
      await this.storing;
    }
    return this.failed && `stream "${this.name}": ${this.failed}`;
  }

  /** The queued chunks as the next batch (numbered after those before it), or undefined when none wait. */
  private batch(): Parameters<typeof insertChunks>[2] | undefined {
    if (this.queued.length === 0) return undefined;
    const chunks = this.queued;
    const firstSeq = this.nextSeq;
    this.nextSeq += chunks.length;
    this.queued = [];
    this.queuedBytes = 0;
    const t = this.owner.task;
    return { workflowId: t.workflow_id, task: t.name, name: this.name, attempt: t.attempt, firstSeq, chunks, at: this.env.clock?.() ?? new Date() };
  }

  /** Queues the waiting chunks as one batch after those before it. */
  private store(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.failed) return;
    const batch = this.batch();
    if (!batch) return;
    this.storing = this.storing
      .then(() => (this.failed ? undefined : insertChunks(this.env.db, this.env.s, batch)))
      .catch((error: unknown) => {
        this.failed ??= errorMessage(error).split('\n')[0];
      });
  }
}

/** A chunk's JSON text as it is stored: scrubbed of the attempt's secrets (the schema saw the handler's own value). */
function storableJson(value: unknown, what: string, secrets: Secrets): Scrubbed<string> {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new StreamWriteError(`${what}: the chunk is not JSON (${(error as Error).message})`);
  }
  if (text === undefined) throw new StreamWriteError(`${what}: the chunk is not JSON`);
  const bad = findUnstorable(value, text);
  if (bad) throw new StreamWriteError(`${what}: the chunk holds ${bad.what}, which Postgres cannot store`);
  return scrubJsonText(value, text, secrets);
}
