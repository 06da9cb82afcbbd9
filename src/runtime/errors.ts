import { DiagnosticsError } from './diagnostics.js';
import { WorkflowNotFinalError } from './sql/retry.js';
import { ExtensionError } from './extend.js';
import { InvalidSignalError, SignalAttemptMismatchError, SignalPayloadMismatchError, UndeclaredSignalKeyError, WorkflowFinishedError } from './signals.js';
import { UnstorableValueError } from './storable.js';

/**
 * Errors about what the caller asked for (a signal that conflicts, a key a task does not declare), as opposed
 * to failures of the runtime: the CLI exits 1 on them and the API answers 4xx.
 */
export function isSubjectError(error: unknown): error is Error {
  return (
    error instanceof SignalPayloadMismatchError ||
    error instanceof SignalAttemptMismatchError ||
    error instanceof UndeclaredSignalKeyError ||
    error instanceof InvalidSignalError ||
    error instanceof WorkflowFinishedError ||
    error instanceof UnstorableValueError ||
    error instanceof DiagnosticsError ||
    error instanceof TaskNotFoundError ||
    error instanceof WorkflowNotFinalError ||
    error instanceof ExtensionError
  );
}

export class TaskNotFoundError extends Error {
  constructor(workflowId: string, task: string) {
    super(`workflow ${workflowId} has no task "${task}"`);
    this.name = 'TaskNotFoundError';
  }
}

/** The HTTP status for a subject error: a conflict with what was stored is 409, bad input 400. */
export function subjectStatus(error: Error): number {
  if (error instanceof SignalPayloadMismatchError || error instanceof SignalAttemptMismatchError || error instanceof WorkflowNotFinalError || error instanceof WorkflowFinishedError) return 409;
  return error instanceof TaskNotFoundError ? 404 : 400;
}
