import { findUnstorable } from '../core/storable.js';

/** The errors of operator actions: each carries its code (error-codes.ts). */

/** An operator action asked with a value it cannot take (a scope, a target, a reason, a filter). */
export class OperationInvalidError extends Error {
  readonly code = 'operation_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'OperationInvalidError';
  }
}

export class PauseNotFoundError extends Error {
  readonly code = 'pause_not_found' as const;
  constructor(scope: string, target: string) {
    super(`${scope} ${target} is not paused (braid pauses lists what is)`);
    this.name = 'PauseNotFoundError';
  }
}

export class OperationNotFoundError extends Error {
  readonly code = 'operation_not_found' as const;
  constructor(name: string) {
    super(`no bulk operation named ${name} (braid bulk list lists them)`);
    this.name = 'OperationNotFoundError';
  }
}

/** A task action its task's state refuses: what the task is, and what would do. */
export class TaskStateConflictError extends Error {
  readonly code = 'task_state_conflict' as const;
  constructor(message: string) {
    super(message);
    this.name = 'TaskStateConflictError';
  }
}

/** An output given by hand that the task's `returns` refuses. */
export class OutputInvalidError extends Error {
  readonly code = 'output_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'OutputInvalidError';
  }
}

/** The longest reason, actor or target an action keeps (longer is refused, not cut). */
export const MAX_LABEL = 200;
export const MAX_REASON = 2000;

/** Checks an operator's free text: a string within its bound, no control characters; trimmed. */
export function checkText(what: string, value: unknown, max: number, required: boolean): string | null {
  if (value === undefined || value === null || value === '') {
    if (required) throw new OperationInvalidError(`${what} is required`);
    return null;
  }
  if (typeof value !== 'string') throw new OperationInvalidError(`${what} must be a string, not ${typeof value}`);
  const text = value.trim();
  if (text.length === 0 && required) throw new OperationInvalidError(`${what} is required`);
  if (text.length > max) throw new OperationInvalidError(`${what} is ${text.length} characters long; at most ${max}`);
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(text) || findUnstorable(text))
    throw new OperationInvalidError(`${what} has control characters or a lone surrogate`);
  return text.length === 0 ? null : text;
}
