-- Ranges of for_each siblings (issue 55): items lo .. hi-1 of one for_each template that share every column but
-- their name, index, id, args and output are one row here rather than one row each in `tasks`, so a claim and a
-- completion can write a range once. Items whose columns could differ are never ranged: keyed items, and those
-- with flow control, a wait, a condition, deferred args, a child workflow, a large output, sealed values or an
-- error. Readers see both kinds of row through task_view, one row per item with the columns of `tasks`.
CREATE TABLE {{schema}}.task_ranges (
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  template text NOT NULL,
  lo int NOT NULL CHECK (lo >= 0),
  hi int NOT NULL,
  -- the id of item lo; item i's is first_id + (i - lo) (ids are the insertion order readers list tasks in)
  first_id bigint NOT NULL,
  kind text NOT NULL,
  queue text NOT NULL,
  priority smallint NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'scheduled', 'available', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'skipped')),
  attempt int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL,
  -- each item's args, an array of hi - lo values; and its output once completed, the same
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
  CHECK (hi > lo),
  CHECK (jsonb_typeof(args) = 'array' AND jsonb_array_length(args) = hi - lo),
  CHECK (outputs IS NULL OR (jsonb_typeof(outputs) = 'array' AND jsonb_array_length(outputs) = hi - lo)),
  CHECK ((state = 'running') = (worker_id IS NOT NULL))
);

-- Every task, ranged or not, one row per item with the columns of `tasks` in their order: what every reader of
-- tasks reads (the architecture test holds readers to it). The conditions a reader puts on workflow_id, template,
-- state, queue or kind reach the ranges' own columns, so reading one workflow's tasks expands only its ranges.
CREATE VIEW {{schema}}.task_view AS
  SELECT * FROM {{schema}}.tasks
  UNION ALL
  SELECT r.workflow_id, r.template || '[' || i || ']', r.first_id + (i - r.lo), r.template, i, NULL::text, r.kind, r.queue, r.priority,
         r.state, r.attempt, r.max_attempts, r.args -> (i - r.lo), r.outputs -> (i - r.lo), '[]'::jsonb, r.deps, r.dependents, r.deps_left,
         r.scheduled_at, r.timeout_ms, r.retry, r.ignore_cancelled_deps, r.ignore_discarded_deps, r.ignore_deleted_deps, NULL::jsonb,
         NULL::jsonb, r.metadata, r.description, r.cancel_requested, r.worker_id, r.created_at, r.started_at, r.finalized_at, '{}'::text[],
         NULL::timestamptz, NULL::jsonb, NULL::jsonb, r.dependents_wait, NULL::text, NULL::boolean, r.ignore_skipped_deps, NULL::jsonb,
         r.completed_by, NULL::jsonb,
         -- the lane as `tasks` generates it for a row without flow control
         CASE WHEN r.state IN ('pending', 'scheduled', 'available', 'retryable') THEN r.state END,
         NULL::text, NULL::text, NULL::text, NULL::double precision, NULL::text, false, NULL::text, NULL::int, NULL::text[]
    FROM {{schema}}.task_ranges r CROSS JOIN LATERAL generate_series(r.lo, r.hi - 1) AS i;
