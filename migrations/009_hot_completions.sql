-- Completions are HOT updates. A completion is the one write that a workflow's lock serialises, so it must be
-- cheap: Postgres updates a row in place ("heap-only", with no new index entries) when no indexed column
-- changes and the row's page has room for the new version.
--
-- 1. No index refers to `state`. The partial indexes filter on `lane`, which is `state` for the states they
--    serve and NULL for the others, so running -> completed changes no indexed value.
-- 2. Running tasks are not indexed. A worker records what it claimed in `claims` (one row per claim, not per
--    task) and deletes the row once every attempt in it has ended; the leader rescues a dead worker's running
--    tasks through its claims.
-- 3. Pages are filled to 30% on insert: a task row is written three times (inserted, claimed, completed), and
--    all three versions fit on its page, so the completion finds room there.
ALTER TABLE {{schema}}.tasks SET (fillfactor = 30);
ALTER TABLE {{schema}}.tasks
  ADD COLUMN lane text GENERATED ALWAYS AS (CASE WHEN state IN ('pending', 'scheduled', 'available', 'retryable') THEN state END) STORED;

DROP INDEX {{schema}}.tasks_fetch;
DROP INDEX {{schema}}.tasks_due;
DROP INDEX {{schema}}.tasks_running;
DROP INDEX {{schema}}.tasks_waiting;
DROP INDEX {{schema}}.tasks_wait_unevaluated;
CREATE INDEX tasks_fetch ON {{schema}}.tasks (queue, priority, scheduled_at, id) WHERE lane = 'available';
CREATE INDEX tasks_due ON {{schema}}.tasks (scheduled_at) WHERE lane IN ('scheduled', 'retryable');
CREATE INDEX tasks_waiting ON {{schema}}.tasks (workflow_id) WHERE lane = 'pending' AND wait_started_at IS NOT NULL;
CREATE INDEX tasks_wait_unevaluated ON {{schema}}.tasks (workflow_id) WHERE lane = 'pending' AND wait_started_at IS NOT NULL AND wait_progress IS NULL;

-- What a worker holds: the tasks one claim (a fetch, or the dependents a completion claimed) made running for
-- it, as parallel arrays of keys. A per-worker record like `workers`, written once per claim.
CREATE TABLE {{schema}}.claims (
  id bigserial PRIMARY KEY,
  worker_id text NOT NULL,
  claimed_at timestamptz NOT NULL,
  workflow_ids text[] NOT NULL,
  names text[] NOT NULL
);
CREATE INDEX claims_worker ON {{schema}}.claims (worker_id);

-- Tasks running when this migration applies were claimed before claims existed.
INSERT INTO {{schema}}.claims (worker_id, claimed_at, workflow_ids, names)
SELECT worker_id, now(), array_agg(workflow_id), array_agg(name) FROM {{schema}}.tasks WHERE state = 'running' GROUP BY worker_id;
