import { describeError, errorMessage, OutputError } from '../core/describe-error.js';
import { atPointer, findUnstorable } from '../core/storable.js';
import type { AttemptOutcome } from '../sql/attempts.js';
import { FencedAbort, ShutdownAbort, TaskCancelled, TaskSnoozed } from './task-errors.js';

/** Outputs larger than this (as JSON) are not parsed back unless a check needs the value: their text is stored as is. */
export const LARGE_OUTPUT_BYTES = 64 * 1024;

/**
 * A handler's return value as stored JSON: its text, its size in bytes and (unless it is large) the value as
 * JSON reads it back; anything that is not JSON, or that Postgres cannot store, is the attempt's error.
 */
export function toJsonOutput(value: unknown): { value: unknown; text: string; bytes: number } {
  if (value === undefined || value === null) return { value: null, text: 'null', bytes: 4 };
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) {
    const text = JSON.stringify(value);
    return { value, text, bytes: text.length };
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_, v: unknown) => {
      if (typeof v === 'bigint') throw new TypeError('a BigInt is not JSON');
      if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`${v} is not JSON`);
      if (typeof v === 'function' || typeof v === 'symbol') throw new TypeError(`a ${typeof v} is not JSON`);
      return v;
    });
  } catch (error) {
    throw new OutputError(`the handler's output is not JSON: ${errorMessage(error)}`);
  }
  if (text === undefined) throw new OutputError("the handler's output is not JSON");
  const bad = findUnstorable(value, text);
  if (bad) throw new OutputError(`the handler's output holds ${bad.what}${atPointer(bad)}, which Postgres cannot store`);
  const bytes = Buffer.byteLength(text);
  return { value: bytes > LARGE_OUTPUT_BYTES ? undefined : JSON.parse(text), text, bytes };
}

/** Whatever a handler threw (not only Errors) becomes a recorded outcome; reading it never throws. */
export function outcomeOf(thrown: unknown): AttemptOutcome {
  try {
    if (thrown instanceof TaskSnoozed) return { type: 'snooze', ms: thrown.ms };
    if (thrown instanceof ShutdownAbort) return { type: 'release', error: { message: thrown.message, kind: 'shutdown' } };
    // the others rescue a worker they take for dead: its attempt is lost, and the next one is a new attempt
    if (thrown instanceof FencedAbort) return { type: 'error', error: { message: thrown.message, kind: 'lost' } };
    if (thrown instanceof TaskCancelled) return { type: 'cancel', error: { message: describeError(thrown).message, kind: 'cancel' } };
  } catch {
    // a proxy whose prototype cannot be read: described below like any other thrown value
  }
  return { type: 'error', error: describeError(thrown) };
}
