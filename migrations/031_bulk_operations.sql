-- Bulk operations (braid bulk, issue 40): an operator's action on every workflow a filter selected, named (the
-- name is its idempotency key), its selection frozen when it is made (one item per workflow), each item's
-- outcome recorded in the transaction that acts on its workflow, so a crash mid-way and a rerun act on none twice.
CREATE TABLE {{schema}}.bulk_operations (
  name text PRIMARY KEY,
  action text NOT NULL CHECK (action IN ('retry', 'cancel', 'upgrade', 'signal')),
  options jsonb NOT NULL,
  filter jsonb NOT NULL,
  actor text NOT NULL,
  reason text,
  rate_per_s double precision,
  state text NOT NULL CHECK (state IN ('running', 'completed', 'cancelled')),
  total int NOT NULL,
  done int NOT NULL DEFAULT 0,
  failed int NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  -- the process acting on it now, and when it last did: another (the leader, a CLI) continues it once stale
  runner text,
  runner_at timestamptz
);

CREATE TABLE {{schema}}.bulk_items (
  operation text NOT NULL REFERENCES {{schema}}.bulk_operations (name) ON DELETE CASCADE,
  seq int NOT NULL,
  workflow_id text NOT NULL,
  -- NULL while to do; done, failed (error says why) or skipped (the operation was cancelled)
  outcome text CHECK (outcome IN ('done', 'failed', 'skipped')),
  error text,
  PRIMARY KEY (operation, seq)
);
CREATE INDEX bulk_items_open ON {{schema}}.bulk_items (operation, seq) WHERE outcome IS NULL;
CREATE INDEX bulk_operations_running ON {{schema}}.bulk_operations (runner_at) WHERE state = 'running';
