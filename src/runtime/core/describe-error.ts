import type { TaskError } from '../sql/attempts.js';
import { NonRetryableError, TaskTimeout } from '../worker/task-errors.js';
import { storableText } from './storable.js';

/** A handler's error whose text is recorded as is (braid made it): its kind says what happened. */
export class OutputError extends Error {
  constructor(
    message: string,
    /** output_invalid: the output breaks its task's `returns`; output_too_large: it is over its `max_output`. */
    readonly code?: 'output_invalid' | 'output_too_large',
  ) {
    super(message);
    this.name = 'OutputError';
  }
}

/** A task's args that did not render (a template reading its deps' outputs failed): code args_invalid. */
export class ArgsError extends Error {
  readonly code = 'args_invalid';
  constructor(
    message: string,
    /** The sensitive values the templates read (in clear): what the message is scrubbed of where it is stored. */
    readonly secrets?: ReadonlySet<string>,
  ) {
    super(message);
    this.name = 'ArgsError';
  }
}

const MAX_MESSAGE = 2000;
const STACK_LINES = 12;
/** The longest error code kept: a longer `code` is no code a policy names. */
const MAX_CODE = 100;

/**
 * Whatever a handler threw, as a recorded error: never throws itself. A thrown value is the handler's, and
 * reading it may run its code (getters, proxies, toString): any of that failing gives a placeholder. The texts
 * are made storable (U+0000 and lone surrogates escaped) and bounded.
 */
export function describeError(thrown: unknown): TaskError {
  try {
    return describe(thrown);
  } catch {
    return { message: 'the handler threw a value that cannot be described (reading it threw)', kind: 'error' };
  }
}

function describe(thrown: unknown): TaskError {
  if (thrown instanceof TaskTimeout) return { message: thrown.message, name: thrown.name, kind: 'timeout' };
  if (thrown instanceof OutputError) return { message: clip(thrown.message), name: thrown.name, kind: 'output', ...(thrown.code ? { code: thrown.code } : {}) };
  if (thrown instanceof Error) {
    const name = textOf(() => thrown.name);
    const message = textOf(() => thrown.message) || name || 'Error';
    const stack = textOf(() => thrown.stack);
    const error: TaskError = { message: clip(message), kind: 'error' };
    if (name) error.name = clip(name, 200);
    // an error's own code (a string, as Node's and most libraries' are) is what retry.non_retryable names
    const code = textOf(() => (thrown as { code?: unknown }).code);
    if (code && code.length <= MAX_CODE) error.code = storableText(code);
    if (thrown instanceof NonRetryableError) error.no_retry = true;
    if (stack)
      error.stack = storableText(
        stack
          .split('\n')
          .slice(0, STACK_LINES)
          .join('\n')
          .slice(0, 8 * MAX_MESSAGE),
      );
    return error;
  }
  return { message: `non-Error thrown: ${clip(textOfValue(thrown))}`, kind: 'error' };
}

/** A property that should be a string; anything else (or a throwing getter) is no text. */
function textOf(read: () => unknown): string {
  try {
    const v = read();
    return typeof v === 'string' ? v : '';
  } catch {
    return '';
  }
}

function textOfValue(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown;
  try {
    const json = JSON.stringify(thrown);
    if (json !== undefined) return json;
  } catch {
    /* falls through to String() */
  }
  try {
    return String(thrown);
  } catch {
    return `a ${typeof thrown} that cannot be shown`;
  }
}

function clip(text: string, max = MAX_MESSAGE): string {
  return storableText(text.length > max ? `${text.slice(0, max)}…` : text);
}

/** A thrown value's one-line message for logs: never throws. */
export function errorMessage(thrown: unknown): string {
  return describeError(thrown).message;
}
