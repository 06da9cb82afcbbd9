/**
 * Records as the API serves them, defined once for the server and the web UI (src/ui/app imports this module
 * for its types, so it imports nothing). `Json<T>` is a record as it arrives over HTTP: dates as ISO strings.
 */

export type WorkflowState = 'running' | 'completed' | 'failed' | 'cancelled';

export interface WorkflowRecord {
  id: string;
  name: string;
  definition_hash: string;
  state: WorkflowState;
  attempt: number;
  inputs: unknown;
  output: unknown;
  output_error: string | null;
  tasks_total: number;
  tasks_open: number;
  tasks_failed: number;
  cancel_requested: boolean;
  /** Why it ended when its state alone does not say: 'timeout' (it failed because its timeout elapsed first). */
  end_reason: string | null;
  /** When the current attempt times out (its definition sets a timeout), else null. */
  deadline_at: Date | null;
  parent_id: string | null;
  group_name: string | null;
  created_at: Date;
  finalized_at: Date | null;
}

/** One row of the workflow list: the workflow and its tasks counted by state. */
export interface WorkflowSummary {
  id: string;
  name: string;
  definition_hash: string;
  state: WorkflowState;
  attempt: number;
  tasks_total: number;
  task_counts: Record<string, number>;
  parent_id: string | null;
  created_at: Date;
  finalized_at: Date | null;
}

export type Json<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };
