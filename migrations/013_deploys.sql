-- Deploys (issue 22): moving running workflows to another version on purpose, and what a deploy reads.

-- Each move of a workflow between versions (braid upgrade, retry --on-current): from, to, when. Removed with
-- its workflow.
CREATE TABLE {{schema}}.workflow_upgrades (
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  id bigserial NOT NULL,
  from_hash text NOT NULL,
  to_hash text NOT NULL,
  at timestamptz NOT NULL,
  PRIMARY KEY (workflow_id, id)
);

-- A task an upgrade renames (renamed_from) takes its timers with it.
ALTER TABLE {{schema}}.timers DROP CONSTRAINT timers_workflow_id_task_fkey;
ALTER TABLE {{schema}}.timers ADD CONSTRAINT timers_workflow_id_task_fkey
  FOREIGN KEY (workflow_id, task) REFERENCES {{schema}}.tasks (workflow_id, name) ON DELETE CASCADE ON UPDATE CASCADE;

-- The running workflows of a name by version: what plan, register, versions and upgrade count and select.
CREATE INDEX workflows_running_version ON {{schema}}.workflows (name, definition_hash) WHERE state = 'running';
