-- Ranges of for_each siblings (issue 55): items lo .. hi-1 of one for_each template that share every column but
-- their name, index, id, args and output are one row here rather than one row each in `tasks`, so that a claim and a
-- completion can write many items at once. Items whose columns could differ are never ranged: keyed items, and
-- those with deps, flow control, a wait, a condition, deferred args, a child workflow or sealed values. Readers see
-- both kinds of row through task_view, one row per item with the columns of `tasks`; every other writer of a
-- workflow's tasks takes its lock through lock_workflows(), which first gives every item of its ranges a row.
CREATE TABLE {{schema}}.task_ranges (
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  template text NOT NULL,
  lo int NOT NULL CHECK (lo >= 0),
  hi int NOT NULL,
  -- the id of item `base` (below); item i's is first_id + (i - base) (ids are the order readers list tasks in)
  first_id bigint NOT NULL,
  kind text NOT NULL,
  queue text NOT NULL,
  priority smallint NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'scheduled', 'available', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'skipped')),
  attempt int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL,
  -- each item's args, an array from item `base` on (item i's is args -> (i - base)), so that items taken from the
  -- front move lo and leave the array where it is (an update that keeps a stored value does not copy it); and each
  -- item's output once completed, the same
  base int NOT NULL,
  args jsonb NOT NULL,
  outputs jsonb,
  deps text[] NOT NULL,
  dependents text[] NOT NULL,
  deps_left int NOT NULL,
  scheduled_at timestamptz NOT NULL,
  timeout_ms int,
  retry jsonb,
  ignore_cancelled_deps boolean NOT NULL,
  ignore_discarded_deps boolean NOT NULL,
  ignore_deleted_deps boolean NOT NULL,
  ignore_skipped_deps boolean NOT NULL DEFAULT false,
  metadata jsonb NOT NULL,
  description text,
  cancel_requested boolean NOT NULL DEFAULT false,
  worker_id text,
  created_at timestamptz NOT NULL,
  started_at timestamptz,
  finalized_at timestamptz,
  dependents_wait boolean NOT NULL DEFAULT false,
  completed_by text,
  PRIMARY KEY (workflow_id, template, lo),
  CHECK (hi > lo AND lo >= base),
  CHECK (jsonb_typeof(args) = 'array' AND jsonb_array_length(args) >= hi - base),
  CHECK (outputs IS NULL OR (jsonb_typeof(outputs) = 'array' AND jsonb_array_length(outputs) >= hi - base)),
  CHECK ((state = 'running') = (worker_id IS NOT NULL))
);

-- Items lo .. hi-1 of range r as the rows they would be in `tasks`, with its columns in their order (generated ones
-- as `tasks` generates them for a row without flow control): the one place an item's name, id and args are made
-- from its range. A test compares task_view's columns with the table's: a column added to `tasks` is added here.
CREATE FUNCTION {{schema}}.range_items(r {{schema}}.task_ranges, p_lo int, p_hi int)
RETURNS TABLE (
  workflow_id text, name text, id bigint, template text, idx integer, key text, kind text, queue text, priority smallint, state text,
  attempt integer, max_attempts integer, args jsonb, output jsonb, errors jsonb, deps text[], dependents text[], deps_left integer,
  scheduled_at timestamp with time zone, timeout_ms integer, retry jsonb, ignore_cancelled_deps boolean, ignore_discarded_deps boolean,
  ignore_deleted_deps boolean, wait jsonb, start jsonb, metadata jsonb, description text, cancel_requested boolean, worker_id text,
  created_at timestamp with time zone, started_at timestamp with time zone, finalized_at timestamp with time zone, wait_keys text[],
  wait_started_at timestamp with time zone, wait_progress jsonb, wait_evidence jsonb, dependents_wait boolean, condition text, condition_met
  boolean, ignore_skipped_deps boolean, deferred jsonb, completed_by text, flow jsonb, lane text, flow_slot text, flow_run_slot text,
  flow_bucket text, flow_tag double precision, flow_parked text, flow_waited boolean, removed_in text, output_bytes integer, needs_keys
  text[]
)
LANGUAGE sql IMMUTABLE AS $$
  SELECT r.workflow_id, r.template || '[' || i || ']', r.first_id + (i - r.base), r.template, i, NULL::text, r.kind, r.queue, r.priority,
         r.state, r.attempt, r.max_attempts, r.args -> (i - r.base), r.outputs -> (i - r.base), '[]'::jsonb, r.deps, r.dependents, r.deps_left,
         r.scheduled_at, r.timeout_ms, r.retry, r.ignore_cancelled_deps, r.ignore_discarded_deps, r.ignore_deleted_deps, NULL::jsonb,
         NULL::jsonb, r.metadata, r.description, r.cancel_requested, r.worker_id, r.created_at, r.started_at, r.finalized_at, '{}'::text[],
         NULL::timestamptz, NULL::jsonb, NULL::jsonb, r.dependents_wait, NULL::text, NULL::boolean, r.ignore_skipped_deps, NULL::jsonb,
         r.completed_by, NULL::jsonb, CASE WHEN r.state IN ('pending', 'scheduled', 'available', 'retryable') THEN r.state END,
         NULL::text, NULL::text, NULL::text, NULL::double precision, NULL::text, false, NULL::text, NULL::int, NULL::text[]
    FROM generate_series(p_lo, p_hi - 1) AS i
$$;

-- Each item of every range as its row. The conditions a reader puts on workflow_id, template, state, queue or kind
-- reach the ranges' own columns (range_items is inlined), so reading one workflow's tasks expands only its ranges.
CREATE VIEW {{schema}}.ranged_tasks AS
  SELECT x.* FROM {{schema}}.task_ranges r CROSS JOIN LATERAL {{schema}}.range_items(r, r.lo, r.hi) AS x;

-- Every task, ranged or not, one row per item with the columns of `tasks` in their order: what every reader of
-- tasks reads (the architecture test holds readers to it).
CREATE VIEW {{schema}}.task_view AS
  SELECT
    workflow_id, name, id, template, idx, key, kind, queue, priority, state, attempt, max_attempts, args, output, errors, deps, dependents,
    deps_left, scheduled_at, timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps, ignore_deleted_deps, wait, start, metadata,
    description, cancel_requested, worker_id, created_at, started_at, finalized_at, wait_keys, wait_started_at, wait_progress,
    wait_evidence, dependents_wait, condition, condition_met, ignore_skipped_deps, deferred, completed_by, flow, lane, flow_slot,
    flow_run_slot, flow_bucket, flow_tag, flow_parked, flow_waited, removed_in, output_bytes, needs_keys
    FROM {{schema}}.tasks
  UNION ALL
  SELECT * FROM {{schema}}.ranged_tasks;

-- Gives every item of these workflows' ranges its row in `tasks` (the same columns, generated ones aside), and
-- ends the ranges. Called with the workflows locked (lock_workflows).
CREATE FUNCTION {{schema}}.unrange(p_ids text[]) RETURNS void LANGUAGE sql VOLATILE AS $$
  WITH moved AS (
    INSERT INTO {{schema}}.tasks (workflow_id, name, id, template, idx, key, kind, queue, priority, state, attempt, max_attempts, args, output,
                                  errors, deps, dependents, deps_left, scheduled_at, timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps,
                                  ignore_deleted_deps, wait, start, metadata, description, cancel_requested, worker_id, created_at, started_at,
                                  finalized_at, wait_keys, wait_started_at, wait_progress, wait_evidence, dependents_wait, condition, condition_met,
                                  ignore_skipped_deps, deferred, completed_by, flow, flow_tag, flow_parked, flow_waited, removed_in, output_bytes,
                                  needs_keys)
    SELECT workflow_id, name, id, template, idx, key, kind, queue, priority, state, attempt, max_attempts, args, output,
           errors, deps, dependents, deps_left, scheduled_at, timeout_ms, retry, ignore_cancelled_deps, ignore_discarded_deps,
           ignore_deleted_deps, wait, start, metadata, description, cancel_requested, worker_id, created_at, started_at,
           finalized_at, wait_keys, wait_started_at, wait_progress, wait_evidence, dependents_wait, condition, condition_met,
           ignore_skipped_deps, deferred, completed_by, flow, flow_tag, flow_parked, flow_waited, removed_in, output_bytes, needs_keys
      FROM {{schema}}.ranged_tasks WHERE workflow_id = ANY(p_ids) ORDER BY id
    RETURNING 1
  )
  DELETE FROM {{schema}}.task_ranges WHERE workflow_id = ANY(p_ids)
$$;

-- The lock every writer of a workflow's tasks takes (the claim and the completion aside, which are to know
-- ranges): the workflows' rows in id order (concurrent writers cannot deadlock), then their ranges given rows, in
-- a statement of its own, so its snapshot shows whatever committed while it waited for the lock. A claim that
-- takes items from a range is to hold the range's workflow row FOR KEY SHARE (and pass over one locked here), so
-- that no claim changes a range this lock is giving rows.
CREATE FUNCTION {{schema}}.lock_workflows(p_ids text[])
RETURNS TABLE (id text, state text, cancel_requested boolean, attempt int) LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT w.id, w.state, w.cancel_requested, w.attempt FROM {{schema}}.workflows w WHERE w.id = ANY(p_ids) ORDER BY w.id FOR UPDATE;
  IF EXISTS (SELECT 1 FROM {{schema}}.task_ranges r WHERE r.workflow_id = ANY(p_ids)) THEN
    PERFORM {{schema}}.unrange(p_ids);
  END IF;
END
$fn$;
