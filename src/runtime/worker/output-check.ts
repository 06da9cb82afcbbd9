import { Worker as Thread } from 'node:worker_threads';
import type { OutputProblem } from '../../compiler/returns.js';
import { outputChecker } from '../core/lazy-compiler.js';
import { threadEntry } from './thread-entry.js';

export interface OutputCheckRequest {
  id: number;
  schema: string;
  output: unknown;
}

export type OutputCheckReply = { id: number; problems: OutputProblem[] } | { id: number; error: string };

/**
 * Strings longer than this in all, checked against a schema with patterns, go to a thread: patterns run in
 * linear time, but about 1 µs a character, so a 1 MiB output would hold the event loop (every other attempt's
 * heartbeat and completion) for most of a second. Below it a check takes well under the 50 ms bound.
 */
const OFF_THREAD_CHARS = 16_384;

/** Checks handlers' outputs against their `returns`: small ones here, large ones with patterns on a thread of their own. */
export class OutputCheck {
  private thread?: Thread;
  private readonly pending = new Map<number, { resolve: (p: OutputProblem[]) => void; reject: (e: Error) => void }>();
  private next = 0;
  private readonly texts = new WeakMap<object, string>();

  async problems(schema: Record<string, unknown>, output: unknown): Promise<OutputProblem[]> {
    let text = this.texts.get(schema);
    if (text === undefined) {
      text = JSON.stringify(schema);
      this.texts.set(schema, text);
    }
    if (!text.includes('"pattern') || stringChars(output, OFF_THREAD_CHARS) < OFF_THREAD_CHARS) {
      return (await outputChecker()).outputProblems(schema, output);
    }
    const thread = this.started();
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      thread.ref();
      thread.postMessage({ id, schema: text, output } satisfies OutputCheckRequest);
    });
  }

  private started(): Thread {
    if (this.thread) return this.thread;
    const entry = threadEntry(import.meta.url, 'output-check-thread');
    const thread = new Thread(entry.file, { eval: entry.eval });
    thread.unref();
    thread.on('message', (reply: OutputCheckReply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) thread.unref();
      if ('error' in reply) waiting?.reject(new Error(reply.error));
      else waiting?.resolve(reply.problems);
    });
    const failed = (error: Error) => {
      if (this.thread === thread) this.thread = undefined;
      for (const w of this.pending.values()) w.reject(new Error(`the output check's thread stopped: ${error.message}`));
      this.pending.clear();
    };
    thread.on('error', failed);
    thread.on('exit', (code) => failed(new Error(`exit ${code}`)));
    this.thread = thread;
    return thread;
  }

  async stop(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    await thread?.terminate();
  }
}

/** The characters of the strings (keys included) in a JSON value, counted up to `enough`. */
function stringChars(value: unknown, enough: number): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && n < enough) {
    const v = stack.pop();
    if (typeof v === 'string') n += v.length;
    else if (Array.isArray(v)) stack.push(...v);
    else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        n += k.length;
        stack.push(x);
      }
    }
  }
  return n;
}
