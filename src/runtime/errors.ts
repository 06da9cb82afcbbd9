import { type Diagnostic, didYouMean } from '../compiler/diagnostics.js';
/** A task name a workflow does not have. */
export class TaskNotFoundError extends Error {
  readonly code = 'task_not_found' as const;
  constructor(workflowId: string, task: string) {
    super(`workflow ${workflowId} has no task "${task}"`);
    this.name = 'TaskNotFoundError';
  }
}

export class InvalidCursorError extends Error {
  readonly code = 'cursor_invalid' as const;
  constructor() {
    super('the cursor is not one this list gave out');
    this.name = 'InvalidCursorError';
  }
}

/** A name no registered workflow has: with the registered name it is likely a typo of, when there is one. */
export class UnknownWorkflowError extends Error {
  readonly code = 'workflow_not_registered' as const;
  constructor(name: string, registered: readonly string[] = []) {
    const like = didYouMean(name, registered);
    super(`workflow ${name} is not registered; ${like ? `did you mean "${like}"?` : 'run braid register'}`);
    this.name = 'UnknownWorkflowError';
  }
}

export class WorkflowNotFoundError extends Error {
  readonly code = 'workflow_not_found' as const;
  constructor(id: string) {
    super(`no workflow with id "${id}"`);
    this.name = 'WorkflowNotFoundError';
  }
}

/** A caller-chosen workflow id (a business key) that is not one. */
export class WorkflowIdInvalidError extends Error {
  readonly code = 'workflow_id_invalid' as const;
  constructor(id: unknown) {
    super(`a workflow id is 1 to 128 letters, digits and _ . : - starting with a letter or digit, not ${JSON.stringify(id)?.slice(0, 140) ?? String(id)}`);
    this.name = 'WorkflowIdInvalidError';
  }
}

/** A caller-chosen workflow id: what URLs, logs and shells carry without quoting. */
export const WORKFLOW_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** A start with a caller-chosen id that a workflow of another name, or with other inputs, already has. */
export class WorkflowConflictError extends Error {
  readonly code = 'workflow_conflict' as const;
  constructor(id: string, existing: { name: string }, name: string) {
    super(
      existing.name === name
        ? `workflow ${id} was already started with other inputs (start it with the same inputs, or choose another id)`
        : `workflow ${id} was already started as ${existing.name}, not ${name} (choose another id)`,
    );
    this.name = 'WorkflowConflictError';
  }
}

/** A version (a hash, or a prefix of one) that the workflow's name does not have, or a prefix that fits several. */
export class DefinitionNotFoundError extends Error {
  readonly code: 'definition_not_found' | 'definition_ambiguous';
  constructor(name: string, hash: string, matches: readonly string[] = []) {
    super(
      matches.length > 1
        ? `version ${hash} of ${name} is ambiguous: ${matches.map((h) => h.slice(0, 12)).join(', ')} (give more of the hash)`
        : `${name} has no registered version ${hash} (braid versions ${name} lists them)`,
    );
    this.code = matches.length > 1 ? 'definition_ambiguous' : 'definition_not_found';
    this.name = 'DefinitionNotFoundError';
  }
}

/** A finished workflow that cannot move to the current version, so a retry on it cannot happen. */
export class WorkflowNotMovableError extends Error {
  readonly code = 'workflow_not_movable' as const;
  constructor(id: string, to: string, reason: string) {
    super(`workflow ${id} cannot move to version ${to.slice(0, 12)}: ${reason}`);
    this.name = 'WorkflowNotMovableError';
  }
}

/** A write that could not lock its workflow in time: another transaction holds it. Retryable. */
export class WorkflowBusyError extends Error {
  readonly code = 'workflow_busy' as const;
  constructor(
    id: string,
    readonly timeoutMs: number,
  ) {
    super(
      `workflow ${id} is busy (workflow_busy): another transaction held it for ${(timeoutMs / 1000).toLocaleString('en-US')} s, the lock timeout; try again`,
    );
    this.name = 'WorkflowBusyError';
  }
}

export class ScheduleNotFoundError extends Error {
  readonly code = 'schedule_not_found' as const;
  constructor(
    readonly workflow: string,
    readonly schedule: string,
    known: readonly string[],
  ) {
    super(`workflow "${workflow}" has no schedule "${schedule}"${known.length > 0 ? ` (its schedules: ${known.join(', ')})` : ' (it has no schedules)'}`);
    this.name = 'ScheduleNotFoundError';
  }
}

export class BackfillRangeError extends Error {
  readonly code = 'backfill_range' as const;
  constructor(message: string) {
    super(message);
    this.name = 'BackfillRangeError';
  }
}

/**
 * A row of a batch start (startMany, --inputs-file, POST /api/workflows/batch) that cannot start: its index
 * (from 0) and what was wrong, with that error's code; nothing of the batch started.
 */
export class BatchRowError extends Error {
  readonly code: string;
  constructor(
    readonly row: number,
    override readonly cause: unknown,
  ) {
    super(`row ${row + 1}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'BatchRowError';
    const code = (cause as { code?: unknown } | null)?.code;
    this.code = typeof code === 'string' ? code : 'internal';
  }
}

/** An extension (ctx.extend, WorkflowHandle.extend) that does not validate, or clashes with the workflow's tasks. */
export class ExtensionError extends Error {
  readonly code = 'extension_invalid' as const;
  constructor(
    message: string,
    readonly diagnostics: Diagnostic[] = [],
  ) {
    super(message);
    this.name = 'ExtensionError';
  }
}
