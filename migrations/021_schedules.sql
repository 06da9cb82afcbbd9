-- Schedules (issue 27): the current version's schedules of each workflow, with the state the leader's
-- schedules service keeps (the last tick it handled, the next one and when to fire it). A global table like
-- definitions: it names workflows by name, not by id. Runs carry the schedule that started them.
CREATE TABLE {{schema}}.schedules (
  workflow_name text NOT NULL,
  name text NOT NULL,
  definition_hash text NOT NULL,
  -- the normalised schedule of that version (cron or every, timezone, dst, inputs, overlap, catchup, jitter, bounds)
  spec jsonb NOT NULL,
  paused boolean NOT NULL DEFAULT false,
  -- ticks up to this never run (when the schedule was deployed, or last resumed)
  since timestamptz NOT NULL,
  last_tick timestamptz,
  next_tick timestamptz,
  -- next_tick plus the schedule's jitter: when the service starts it
  next_fire_at timestamptz,
  -- overlap buffer_one: the tick that waits for the running run to end
  buffered_tick timestamptz,
  last_run_id text,
  -- what the last tick did: started, skipped (overlap), buffered, cancelled_previous, failed (with last_error)
  last_outcome text,
  last_error text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_name, name)
);
CREATE INDEX schedules_due ON {{schema}}.schedules (next_fire_at) WHERE NOT paused AND next_fire_at IS NOT NULL;
CREATE INDEX schedules_buffered ON {{schema}}.schedules (workflow_name, name) WHERE buffered_tick IS NOT NULL;

ALTER TABLE {{schema}}.workflows ADD COLUMN schedule text;
CREATE INDEX workflows_schedule_running ON {{schema}}.workflows (name, schedule) WHERE schedule IS NOT NULL AND state = 'running';
CREATE INDEX workflows_schedule_runs ON {{schema}}.workflows (name, schedule, created_at DESC) WHERE schedule IS NOT NULL;
