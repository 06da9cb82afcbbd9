-- Output streams (issue 41): the chunks a task's handler writes while it runs, in order per attempt (a new
-- attempt starts a new stream), kept with their workflow and removed with it.
CREATE TABLE {{schema}}.task_streams (
  workflow_id text NOT NULL REFERENCES {{schema}}.workflows (id) ON DELETE CASCADE,
  task text NOT NULL,
  name text NOT NULL,
  attempt int NOT NULL,
  seq int NOT NULL,
  chunk jsonb NOT NULL,
  at timestamptz NOT NULL,
  PRIMARY KEY (workflow_id, task, name, attempt, seq)
);
