-- Per-task logs (issue 26): the lines a handler writes through ctx.log, and braid's own lines about an attempt
-- (failed, retried, rescued, cancelled), each stamped with its task's attempt. They belong to their task: a
-- task renamed by an upgrade keeps them, and a task or workflow deleted (retention, an upgrade that drops the
-- task) takes them along. Lines are read per workflow in the order they were stored (id), by task and attempt.
CREATE TABLE {{schema}}.task_logs (
  workflow_id text NOT NULL,
  id bigserial NOT NULL,
  task text NOT NULL,
  attempt int NOT NULL,
  at timestamptz NOT NULL,
  level text NOT NULL CHECK (level IN ('debug', 'info', 'warn', 'error')),
  source text NOT NULL CHECK (source IN ('handler', 'braid')),
  message text NOT NULL,
  fields jsonb,
  PRIMARY KEY (workflow_id, id),
  FOREIGN KEY (workflow_id, task) REFERENCES {{schema}}.tasks (workflow_id, name) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX task_logs_by_task ON {{schema}}.task_logs (workflow_id, task, attempt, id);
