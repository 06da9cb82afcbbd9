import { describe, expect, it } from 'vitest';
import { HttpError } from '../src/api/http.js';
import { CompileError } from '../src/compiler/compile-error.js';
import { type ERROR_CODES, httpStatus, isCallerError, isCoded } from '../src/error-codes.js';
import { UnstorableValueError } from '../src/runtime/core/storable.js';
import { DatabaseDamagedError, DatabaseLockedError } from '../src/runtime/db/pglite.js';
import { WorkflowNotFinalError } from '../src/runtime/engine/retry.js';
import {
  DefinitionNotFoundError,
  ExtensionError,
  InvalidCursorError,
  TaskNotFoundError,
  UnknownWorkflowError,
  WorkflowConflictError,
  WorkflowIdInvalidError,
  WorkflowNotFoundError,
  WorkflowNotMovableError,
} from '../src/runtime/errors.js';
import { DiagnosticsError } from '../src/runtime/waits/diagnostics.js';
import {
  InvalidSignalError,
  SignalAttemptMismatchError,
  SignalPayloadMismatchError,
  UndeclaredSignalKeyError,
  WorkflowFinishedError,
} from '../src/runtime/waits/signals.js';

describe('one error vocabulary', () => {
  it('every error a caller can get carries a code of the table, which gives its status and exit class', () => {
    const row = { id: '1', attempt: 1, key: 'k', payload: null, source: null, idempotency_key: 'i', created_at: new Date() };
    const errors: [Error, number][] = [
      [new CompileError([]), 422],
      [new WorkflowNotFoundError('w'), 404],
      [new UnknownWorkflowError('n'), 404],
      [new TaskNotFoundError('w', 't'), 404],
      [new SignalPayloadMismatchError('k', 'i', row), 409],
      [new SignalAttemptMismatchError(2, 1), 409],
      [new WorkflowFinishedError('w', 'completed'), 409],
      [new WorkflowNotFinalError('w', 'running'), 409],
      [new UndeclaredSignalKeyError('t', 'k', []), 400],
      [new InvalidSignalError('x'), 400],
      [new UnstorableValueError('x'), 400],
      [new ExtensionError('x'), 400],
      [new DiagnosticsError('x'), 400],
      [new InvalidCursorError(), 400],
      [new WorkflowIdInvalidError('-x'), 400],
      [new WorkflowConflictError('w', { name: 'a' }, 'b'), 409],
      [new HttpError(415, 'x'), 415],
      [new DefinitionNotFoundError('n', 'abc'), 404],
      [new DefinitionNotFoundError('n', 'ab', ['ab1', 'ab2']), 400],
      [new WorkflowNotMovableError('w', 'abc', 'why'), 409],
    ];
    for (const [error, status] of errors) {
      // what a log line or a stack names is the class a caller catches
      expect(error.name).toBe(error.constructor.name);
      expect(isCoded(error), error.name).toBe(true);
      expect(isCallerError(error), error.name).toBe(true);
      expect(httpStatus((error as unknown as { code: keyof typeof ERROR_CODES }).code), error.name).toBe(status);
    }
    for (const error of [new DatabaseLockedError('d', 1), new DatabaseDamagedError('d', new Error('x'))]) {
      expect(isCoded(error)).toBe(true);
      expect(isCallerError(error)).toBe(false);
    }
    // a database error's SQLSTATE, or a socket's code, is no code of braid's
    expect(isCoded(Object.assign(new Error('x'), { code: '22P05' }))).toBe(false);
    expect(isCoded(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
  });
});
