/**
 * The transition rules as SQL, each written once and used by every statement that needs it. decide.ts holds
 * the same rules as pure functions for the paths that decide in TypeScript; test/runtime/rules.test.ts runs
 * both over one table on both backends, so the two cannot drift.
 */

/** A task state that never changes again (decide.ts isFinal). */
export function isFinalSql(state: string): string {
  return `${state} IN ('completed', 'cancelled', 'discarded', 'skipped')`;
}

/** A pending task that its wait, or its condition not yet decided, holds once its deps are done (decide.ts readyState's `held`). */
export function heldSql(t: string): string {
  return `(${t}.wait IS NOT NULL OR (${t}.condition IS NOT NULL AND ${t}.condition_met IS NULL))`;
}

/**
 * Where a pending task goes once its deps may have been satisfied (decide.ts readyState): pending while deps
 * are left or a wait holds it, then scheduled until its time, then available.
 */
export function readyStateSql(t: { depsLeft: string; held: string; scheduledAt: string }, now: string): string {
  return `(CASE WHEN ${t.depsLeft} > 0 OR ${t.held} THEN 'pending' WHEN ${t.scheduledAt} > ${now} THEN 'scheduled' ELSE 'available' END)`;
}

/**
 * What a dep's final state ('deleted': its row is gone) means for a dependent `t` (decide.ts depOutcome):
 * 'satisfied', 'failed' or 'skipped', by the dependent's ignore flags.
 */
export function depOutcomeSql(depState: string, t: string): string {
  return `(CASE ${depState} WHEN 'completed' THEN 'satisfied'
     WHEN 'skipped' THEN CASE WHEN ${t}.ignore_skipped_deps THEN 'satisfied' ELSE 'skipped' END
     WHEN 'cancelled' THEN CASE WHEN ${t}.ignore_cancelled_deps THEN 'satisfied' ELSE 'failed' END
     WHEN 'discarded' THEN CASE WHEN ${t}.ignore_discarded_deps THEN 'satisfied' ELSE 'failed' END
     WHEN 'deleted' THEN CASE WHEN ${t}.ignore_deleted_deps THEN 'satisfied' ELSE 'failed' END END)`;
}

/** How a workflow ends once none of its tasks is open (decide.ts finalWorkflowState). */
export function finalWorkflowStateSql(w: string): string {
  return (
    `(CASE WHEN ${w}.end_reason = 'timeout' THEN 'failed' WHEN ${w}.cancel_requested ` +
    `THEN 'cancelled' WHEN ${w}.tasks_failed > 0 THEN 'failed' ELSE 'completed' END)`
  );
}
