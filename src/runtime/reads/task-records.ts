import type { Queryable } from '../db/types.js';
import { selectTasks, selectTasksByName, type TaskRecord, type TaskRow } from '../sql/workflows.js';
import { waitPhase } from '../waits/phase.js';

/** A task row as callers read it: its wait with the phase it is in, its last evaluation and its evidence. */
export function toTaskRecord(row: TaskRow): TaskRecord {
  const { wait, wait_started_at, wait_progress, wait_evidence, ...rest } = row;
  return {
    ...rest,
    wait: wait && {
      ...wait,
      phase: waitPhase(row),
      started_at: wait_started_at && new Date(wait_started_at).toISOString(),
      last_evaluation: wait_progress?.last ?? null,
      evidence: wait_evidence,
    },
  };
}

/** Tasks of one workflow in insertion order, paged. */
export async function loadTasks(q: Queryable, s: string, id: string, page: { limit?: number; offset?: number } = {}): Promise<TaskRecord[]> {
  return (await selectTasks(q, s, id, page)).map(toTaskRecord);
}

export async function loadTasksByName(q: Queryable, s: string, id: string, names: readonly string[]): Promise<TaskRecord[]> {
  return (await selectTasksByName(q, s, id, names)).map(toTaskRecord);
}
