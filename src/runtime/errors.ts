/** A task name a workflow does not have. */
export class TaskNotFoundError extends Error {
  readonly code = 'task_not_found' as const;
  constructor(workflowId: string, task: string) {
    super(`workflow ${workflowId} has no task "${task}"`);
    this.name = 'TaskNotFoundError';
  }
}
