import { describeError, errorMessage, OutputError } from '../describe-error.js';
import type { AttemptOutcome } from '../sql/attempts.js';
import { atPointer, findUnstorable } from '../storable.js';
import { FencedAbort, ShutdownAbort } from './attempt.js';
import { TaskCancelled, TaskSnoozed } from './handlers.js';

/** A handler's return value as stored JSON; anything that is not JSON (or too large) is the attempt's error. */
export function toJsonOutput(value: unknown, maxBytes: number): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
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
  if (Buffer.byteLength(text) > maxBytes)
    throw new OutputError(`the handler's output is ${Buffer.byteLength(text)} bytes of JSON, over the ${maxBytes}-byte limit`);
  const bad = findUnstorable(value, text);
  if (bad) throw new OutputError(`the handler's output holds ${bad.what}${atPointer(bad)}, which Postgres cannot store`);
  return JSON.parse(text);
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
