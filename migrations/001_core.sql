-- Definitions: immutable versions, identified by the hash of the normalised definition.
CREATE TABLE {{schema}}.definitions (
  id bigserial PRIMARY KEY,
  name text NOT NULL,
  hash text NOT NULL,
  normalized jsonb NOT NULL,
  file text,
  registered_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (name, hash)
);

-- The version `start` uses for each name: the last one registered.
CREATE TABLE {{schema}}.definition_current (
  name text PRIMARY KEY,
  hash text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per workflow; its row lock serialises every change to what its tasks may do.
CREATE TABLE {{schema}}.workflows (
  id text PRIMARY KEY,
  name text NOT NULL,
  definition_hash text NOT NULL,
  state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed', 'failed', 'cancelled')),
  attempt integer NOT NULL DEFAULT 1,
  inputs jsonb NOT NULL,
  output_template jsonb,
  output jsonb,
  output_error text,
  tasks_total integer NOT NULL,
  tasks_open integer NOT NULL,
  tasks_failed integer NOT NULL DEFAULT 0,
  cancel_requested boolean NOT NULL DEFAULT false,
  parent_id text,
  group_name text,
  created_at timestamptz NOT NULL,
  attempt_started_at timestamptz NOT NULL,
  finalized_at timestamptz
);
CREATE INDEX workflows_finalized ON {{schema}}.workflows (finalized_at) WHERE state <> 'running';
CREATE INDEX workflows_name_created ON {{schema}}.workflows (name, created_at DESC);
CREATE INDEX workflows_parent ON {{schema}}.workflows (parent_id) WHERE parent_id IS NOT NULL;

-- Tasks, keyed by (workflow_id, name). deps_left counts deps not yet satisfied; dependents is the
-- reverse edge list, so a completion finds what to advance without scanning the workflow.
CREATE TABLE {{schema}}.tasks (
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  name text NOT NULL,
  id bigserial NOT NULL,
  template text NOT NULL,
  idx integer,
  key text,
  kind text NOT NULL,
  queue text NOT NULL,
  priority smallint NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'scheduled', 'available', 'running', 'retryable', 'completed', 'cancelled', 'discarded')),
  attempt integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  args jsonb NOT NULL,
  output jsonb,
  errors jsonb NOT NULL DEFAULT '[]',
  deps text[] NOT NULL,
  dependents text[] NOT NULL,
  deps_left integer NOT NULL,
  scheduled_at timestamptz NOT NULL,
  timeout_ms integer,
  retry jsonb NOT NULL,
  ignore_cancelled_deps boolean NOT NULL,
  ignore_discarded_deps boolean NOT NULL,
  ignore_deleted_deps boolean NOT NULL,
  wait jsonb,
  start jsonb,
  metadata jsonb NOT NULL,
  description text,
  cancel_requested boolean NOT NULL DEFAULT false,
  worker_id text,
  created_at timestamptz NOT NULL,
  started_at timestamptz,
  finalized_at timestamptz,
  PRIMARY KEY (workflow_id, name)
);
CREATE INDEX tasks_fetch ON {{schema}}.tasks (queue, priority, scheduled_at, id) WHERE state = 'available';
CREATE INDEX tasks_due ON {{schema}}.tasks (scheduled_at) WHERE state IN ('scheduled', 'retryable');
CREATE INDEX tasks_running ON {{schema}}.tasks (worker_id) WHERE state = 'running';

-- Runtime processes and the handlers they run; a stale heartbeat means the process is gone.
CREATE TABLE {{schema}}.workers (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  queues text[] NOT NULL,
  kinds text[] NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  stopped_at timestamptz
);

-- One elected leader at a time: a lease that its holder renews.
CREATE TABLE {{schema}}.leader (
  name text PRIMARY KEY,
  holder text NOT NULL,
  elected_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
