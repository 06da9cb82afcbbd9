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
