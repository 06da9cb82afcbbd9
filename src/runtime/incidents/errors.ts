export { checkText, MAX_LABEL, MAX_REASON, OperationInvalidError } from '../core/actor.js';

/** The errors of operator actions: each carries its code (error-codes.ts). */

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
