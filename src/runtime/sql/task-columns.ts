/**
 * The task row's columns, in one place: those an insert writes (each with the type of the JSON field that
 * carries it and, where it is not the field as is, the expression that makes the column from it), and those a
 * read returns as a TaskRecord. A column added to the tasks table is added here: to TaskRow and INSERTED for
 * what an insert writes, to TASK_COLUMNS for what a read returns.
 */
import type { Deferred } from '../../compiler/cel/deferred.js';
import type { PlanTask } from '../../compiler/plan.js';
import type { TaskRecord } from '../wire/index.js';

/**
 * A task's deferred strings as stored: the plan's pointers and item, the index, and the args and metadata as
 * written; `rendered` once braid's leader rendered them into the row for a worker without CEL (docs/protocol.md).
 */
export type DeferredRow = Deferred & { index: number | null; args: unknown; metadata: unknown; rendered?: true };

/** The columns a task is read back with (TaskRecord) as they are written. */
type Shared = 'name' | 'template' | 'idx' | 'key' | 'kind' | 'queue' | 'priority' | 'state' | 'max_attempts' | 'args' | 'deps' | 'dependents';

/** A task as inserted (INSERTED's fields): the plan's task with its initial state, reverse edges and wait keys. */
export interface TaskRow extends Pick<TaskRecord, Shared | 'deps_left' | 'timeout_ms' | 'metadata' | 'description'> {
  ord: number;
  dependents_wait: boolean;
  wait_keys: string[];
  scheduled_at: string;
  /** null: the default policy (BUILTIN_DEFAULTS.retry). */
  retry: PlanTask['retry'] | null;
  ignore_cancelled_deps: boolean;
  ignore_discarded_deps: boolean;
  ignore_deleted_deps: boolean;
  ignore_skipped_deps: boolean;
  condition: string | null;
  deferred: DeferredRow | null;
  flow: PlanTask['flow'] | null;
  wait: PlanTask['wait'];
  start: PlanTask['start'];
  /** The data keys its args' sealed values need (null: none). */
  needs_keys: string[] | null;
}

/** [column, the recordset field's type, the expression over the field `x.<column>` when not the field itself]. */
const INSERTED: readonly (readonly [string, string, string?])[] = [
  ['name', 'text'],
  ['template', 'text'],
  ['idx', 'int'],
  ['key', 'text'],
  ['kind', 'text'],
  ['queue', 'text'],
  ['priority', 'int'],
  ['state', 'text'],
  ['max_attempts', 'int'],
  ['args', 'jsonb', "coalesce(x.args, 'null'::jsonb)"],
  ['deps', 'jsonb', 'ARRAY(SELECT jsonb_array_elements_text(x.deps))'],
  ['dependents', 'jsonb', 'ARRAY(SELECT jsonb_array_elements_text(x.dependents))'],
  ['deps_left', 'int'],
  ['scheduled_at', 'timestamptz'],
  ['timeout_ms', 'int'],
  ['retry', 'jsonb'],
  ['ignore_cancelled_deps', 'boolean'],
  ['ignore_discarded_deps', 'boolean'],
  ['ignore_deleted_deps', 'boolean'],
  ['ignore_skipped_deps', 'boolean', 'coalesce(x.ignore_skipped_deps, false)'],
  ['wait', 'jsonb'],
  ['start', 'jsonb'],
  ['metadata', 'jsonb', "coalesce(x.metadata, '{}'::jsonb)"],
  ['description', 'text'],
  ['dependents_wait', 'boolean'],
  ['wait_keys', 'jsonb', 'ARRAY(SELECT jsonb_array_elements_text(x.wait_keys))'],
  ['condition', 'text'],
  ['deferred', 'jsonb'],
  ['flow', 'jsonb'],
  ['needs_keys', 'jsonb', 'CASE WHEN x.needs_keys IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(x.needs_keys)) END'],
];

/**
 * The parts of the insert from `jsonb_to_recordset(<rows>) AS x(...)`: the column list, the values (after the
 * workflow id and the creation time, which the statement supplies) and the recordset's field types.
 */
export const TASK_INSERT = {
  columns: `workflow_id, created_at, ${INSERTED.map(([c]) => c).join(', ')}`,
  values: (workflowId: string, createdAt: string) => `${workflowId}, ${createdAt}, ${INSERTED.map(([c, , e]) => e ?? `x.${c}`).join(', ')}`,
  /** The values as named columns (but the workflow id and the creation time), for a template stamped per workflow. */
  named: INSERTED.map(([c, , e]) => `${e ?? `x.${c}`} AS ${c}`).join(', '),
  /** The named columns, read from the template `r`. */
  stamped: (r: string) => INSERTED.map(([c]) => `${r}.${c}`).join(', '),
  /** `ord` orders the insert (the order loads and status list tasks in); it is no column. */
  fields: `ord int, ${INSERTED.map(([c, t]) => `${c} ${t}`).join(', ')}`,
};

/** What a read of a task returns (TaskRecord, with what wait snapshots are made from). */
export const TASK_COLUMNS = [
  'workflow_id, name, template, idx, key, kind, queue, priority, state, attempt, max_attempts, args, output, errors',
  'deps, dependents, deps_left, scheduled_at, timeout_ms, wait, start, metadata, description',
  'condition AS "when", condition_met AS when_met, cancel_requested, worker_id, completed_by, created_at, started_at, finalized_at',
  'wait_started_at, wait_progress, wait_evidence, flow, removed_in, needs_keys',
].join(', ');
