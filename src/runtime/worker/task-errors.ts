/** The errors that end a handler's attempt other than by its own throw: its context's cancel and snooze, a timeout, an abort. */

/** Thrown by ctx.cancel(): the task ends cancelled, not retried. */
export class TaskCancelled extends Error {
  constructor(reason = 'cancelled by its handler') {
    super(reason);
    this.name = 'TaskCancelled';
  }
}

/** The longest snooze: a year. */
export const MAX_SNOOZE_MS = 365 * 24 * 3_600_000;

/**
 * Thrown by ctx.snooze(): the task runs again later without using up an attempt. A duration that is not a
 * number of milliseconds from 0 to a year throws a RangeError instead: the attempt fails with that message.
 */
export class TaskSnoozed extends Error {
  constructor(readonly ms: number) {
    super(`snoozed for ${checkedSnooze(ms)} ms`);
    this.name = 'TaskSnoozed';
  }
}

function checkedSnooze(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_SNOOZE_MS) {
    throw new RangeError(`ctx.snooze(ms) takes a number of milliseconds from 0 to ${MAX_SNOOZE_MS} (a year), not ${describeValue(ms)}`);
  }
  return ms;
}

function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.slice(0, 40));
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined || v === null) return String(v);
  return `a ${typeof v}`;
}

/** A handler that ran past its timeout. */
export class TaskTimeout extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'TaskTimeout';
  }
}

/**
 * Aborts a handler whose worker lost the database for longer than dead-after: the others take the worker for
 * dead and run the task again, so this attempt counts as lost (an error, kind lost), never as given back.
 */
export class FencedAbort extends Error {
  constructor() {
    super('aborted: this worker lost the database for longer than dead-after, so the task runs again elsewhere');
    this.name = 'FencedAbort';
  }
}

/** Aborts a handler still running when the worker's shutdown deadline passes: its task is released to run again. */
export class ShutdownAbort extends Error {
  constructor() {
    super('aborted: the worker shut down before the handler finished');
    this.name = 'ShutdownAbort';
  }
}

/**
 * Thrown by a handler (or ctx.fail with retry: false) for a failure no retry can mend — a card declined, a 404
 * from a partner: the task ends at once, whatever attempts it has left, its error saying why it was not retried.
 * `code` is the error's code, as a task's `retry.non_retryable` names codes.
 */
export class NonRetryableError extends Error {
  readonly code?: string;
  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NonRetryableError';
    if (options.code !== undefined) this.code = options.code;
  }
}

/** Thrown by ctx.fail(message, { code }): the attempt fails with that code, retried as its task's policy says. */
export class TaskFailed extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'TaskFailed';
  }
}
