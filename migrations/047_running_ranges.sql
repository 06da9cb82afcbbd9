-- Running ranges (issue 55): the items a claim takes from a range's front are to stay one row, running for the
-- worker that claimed them, until their completions fill in each item's output and finish time; an item finished
-- in a running range reads as completed (without a worker, completed by the range's), the others as running. A
-- dead worker's running ranges are given rows under their workflow's lock before its attempts are rescued.
ALTER TABLE {{schema}}.task_ranges ADD COLUMN finished_at timestamptz[];
ALTER TABLE {{schema}}.task_ranges ADD CONSTRAINT task_ranges_finished_at_check
  CHECK (finished_at IS NULL OR cardinality(finished_at) >= hi - base);
-- The running ranges of a worker (the rescuer's look for those of dead workers).
CREATE INDEX task_ranges_running ON {{schema}}.task_ranges (worker_id) WHERE worker_id IS NOT NULL;

-- Item i's finish time is finished_at[i - base + 1] (arrays count from 1).
CREATE OR REPLACE FUNCTION {{schema}}.range_items(r {{schema}}.task_ranges, p_lo int, p_hi int)
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
         CASE WHEN f.at IS NOT NULL THEN 'completed' ELSE r.state END, r.attempt, r.max_attempts, r.args -> (i - r.base),
         r.outputs -> (i - r.base), '[]'::jsonb, r.deps, r.dependents, r.deps_left, r.scheduled_at, r.timeout_ms, r.retry,
         r.ignore_cancelled_deps, r.ignore_discarded_deps, r.ignore_deleted_deps, NULL::jsonb, NULL::jsonb, r.metadata, r.description,
         r.cancel_requested, CASE WHEN f.at IS NULL THEN r.worker_id END, r.created_at, r.started_at, coalesce(f.at, r.finalized_at),
         '{}'::text[], NULL::timestamptz, NULL::jsonb, NULL::jsonb, r.dependents_wait, NULL::text, NULL::boolean, r.ignore_skipped_deps,
         NULL::jsonb, CASE WHEN f.at IS NOT NULL THEN coalesce(r.completed_by, r.worker_id) ELSE r.completed_by END, NULL::jsonb,
         CASE WHEN f.at IS NULL AND r.state IN ('pending', 'scheduled', 'available', 'retryable') THEN r.state END,
         NULL::text, NULL::text, NULL::text, NULL::double precision, NULL::text, false, NULL::text, NULL::int, NULL::text[]
    FROM generate_series(p_lo, p_hi - 1) AS i CROSS JOIN LATERAL (SELECT r.finished_at[i - r.base + 1] AS at) f
$$;
