-- Waits. A task with a wait stays pending after its deps are satisfied until its condition holds.
--   wait_keys        the signal keys its wait declares: an emit evaluates only the waits that name its key
--   wait_started_at  when its deps were satisfied and the wait became active
--   wait_progress    what evaluation has learnt so far: per signal term the matched ids and the last id
--                    scanned (so each emit scans only new rows), and the last evaluation's term values/errors
--   wait_evidence    the snapshot stored when the wait resolved
--   dependents_wait  some dependent has a wait: completing this task may activate it
ALTER TABLE {{schema}}.tasks
  ADD COLUMN wait_keys text[] NOT NULL DEFAULT '{}',
  ADD COLUMN wait_started_at timestamptz,
  ADD COLUMN wait_progress jsonb,
  ADD COLUMN wait_evidence jsonb,
  ADD COLUMN dependents_wait boolean NOT NULL DEFAULT false;

-- The active waits of a workflow (an emit looks here, never at the workflow's other tasks).
CREATE INDEX tasks_waiting ON {{schema}}.tasks (workflow_id) WHERE state = 'pending' AND wait_started_at IS NOT NULL;
-- Waits activated but never evaluated (a crash between the two): the leader evaluates them.
CREATE INDEX tasks_wait_unevaluated ON {{schema}}.tasks (workflow_id) WHERE state = 'pending' AND wait_started_at IS NOT NULL AND wait_progress IS NULL;

-- Signals: durable, workflow-scoped facts. Ids are assigned while the emitting transaction holds the
-- workflow's row lock, so within a workflow they grow in commit order: an evidence boundary (the last id seen
-- by an evaluation) never skips a row that commits later.
CREATE TABLE {{schema}}.signals (
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  id bigserial NOT NULL,
  attempt integer NOT NULL,
  key text NOT NULL,
  payload jsonb NOT NULL,
  source jsonb,
  idempotency_key text,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (workflow_id, id)
);
CREATE INDEX signals_key ON {{schema}}.signals (workflow_id, key, id);
CREATE UNIQUE INDEX signals_idempotency ON {{schema}}.signals (workflow_id, key, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Timers of active waits, computed when the wait becomes active (every anchor is known by then). The leader
-- fires due ones and evaluates their task; fired_at makes each fire once.
CREATE TABLE {{schema}}.timers (
  workflow_id text NOT NULL,
  task text NOT NULL,
  name text NOT NULL,
  attempt integer NOT NULL,
  fire_at timestamptz NOT NULL,
  fired_at timestamptz,
  PRIMARY KEY (workflow_id, task, name),
  FOREIGN KEY (workflow_id, task) REFERENCES {{schema}}.tasks (workflow_id, name) ON DELETE CASCADE
);
CREATE INDEX timers_due ON {{schema}}.timers (fire_at) WHERE fired_at IS NULL;
