-- Events that start workflows (issue 41). An event is recorded once per (name, event id): the same event
-- delivered again is found here and starts nothing. Each trigger's outcome (the run it started, the run its
-- business key already had, or why it could not be evaluated) is kept with the event.
CREATE TABLE {{schema}}.events (
  seq bigserial PRIMARY KEY,
  name text NOT NULL,
  event_id text NOT NULL,
  payload jsonb NOT NULL,
  at timestamptz NOT NULL,
  outcomes jsonb NOT NULL DEFAULT '[]',
  UNIQUE (name, event_id)
);
CREATE INDEX events_at ON {{schema}}.events (at DESC);
CREATE INDEX events_name_at ON {{schema}}.events (name, at DESC);

-- The runs each event started, both ways: a workflow's page names its event; each goes with its workflow.
CREATE TABLE {{schema}}.event_starts (
  event_seq bigint NOT NULL REFERENCES {{schema}}.events (seq) ON DELETE CASCADE,
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  PRIMARY KEY (event_seq, workflow_id)
);
CREATE INDEX event_starts_workflow ON {{schema}}.event_starts (workflow_id);

-- The events the current version of each workflow is started by (kept with it at register, like schedules).
CREATE TABLE {{schema}}.triggers (
  event text NOT NULL,
  workflow_name text NOT NULL,
  definition_hash text NOT NULL,
  PRIMARY KEY (event, workflow_name)
);
CREATE INDEX triggers_workflow ON {{schema}}.triggers (workflow_name);
