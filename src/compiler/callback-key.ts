import { sha256Hex } from './canonical-json.js';

/** The prefix of the signal keys of callback terms: only their links send signals of such keys. */
export const CALLBACK_KEY_PREFIX = 'callback:';

/**
 * The signal key of a task's callback term: readable where it fits a key's 128 characters, else a digest (an
 * expansion's name with a long key can be longer), so each task and term has its own.
 */
export function callbackKey(task: string, term: string): string {
  const key = `${CALLBACK_KEY_PREFIX}${task}.${term}`;
  return key.length <= 128 ? key : `${CALLBACK_KEY_PREFIX}${sha256Hex(`${task}\u0000${term}`)}`;
}
