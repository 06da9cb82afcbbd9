-- Effects that cross workflows go through rows keyed by the workflow they act on, each applied in a
-- transaction of its own (SPEC "Scale"):
--   start      a start task asked for this child workflow (payload: parent, group, definition version, inputs)
--   cancel     this workflow's parent was cancelled
--   finalized  this workflow finalized and some tasks wait on it: their waits are evaluated again
CREATE TABLE {{schema}}.effects (
  workflow_id text NOT NULL,
  id bigserial NOT NULL,
  kind text NOT NULL CHECK (kind IN ('start', 'cancel', 'finalized')),
  payload jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  PRIMARY KEY (workflow_id, id)
);
CREATE INDEX effects_order ON {{schema}}.effects (id);

-- Which task waits on which workflow: a finalizing workflow finds its waiters here, never by a scan.
CREATE TABLE {{schema}}.workflow_waiters (
  awaited_id text NOT NULL,
  workflow_id text NOT NULL,
  task text NOT NULL,
  PRIMARY KEY (awaited_id, workflow_id, task)
);
CREATE INDEX workflow_waiters_waiting ON {{schema}}.workflow_waiters (workflow_id);

-- Set (under the awaited row's lock) when a wait registers on a workflow, so its finalization, which takes
-- the same lock, knows to leave a `finalized` effect.
ALTER TABLE {{schema}}.workflows ADD COLUMN has_waiters boolean NOT NULL DEFAULT false;
