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

export class UnknownWorkflowError extends Error {
  readonly code = 'workflow_not_registered' as const;
  constructor(name: string) {
    super(`workflow ${name} is not registered; run braid register`);
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
