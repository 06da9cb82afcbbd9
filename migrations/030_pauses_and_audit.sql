-- Incident operations (issue 40). A pause is a persisted gate: while a row names a task's queue, kind or
-- workflow name, no claim takes the task (running ones finish); it outlives registers, deploys and restarts,
-- being no part of a definition. The audit trail records each operator action with who, when and why.
CREATE TABLE {{schema}}.pauses (
  scope text NOT NULL CHECK (scope IN ('queue', 'kind', 'workflow')),
  target text NOT NULL,
  actor text NOT NULL,
  reason text,
  paused_at timestamptz NOT NULL,
  PRIMARY KEY (scope, target)
);

-- Whether a workflow's name is paused: nothing is read per task while no workflow name is paused (the first
-- test reads no row of the task, so a statement evaluates it once).
CREATE FUNCTION {{schema}}.workflow_paused(p_workflow text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM {{schema}}.pauses WHERE scope = 'workflow')
     AND EXISTS (SELECT 1 FROM {{schema}}.workflows w JOIN {{schema}}.pauses p ON p.scope = 'workflow' AND p.target = w.name
                  WHERE w.id = p_workflow)
$$;

CREATE TABLE {{schema}}.audit (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  -- what was acted on, in words ("queue payments", a workflow id, "INC-42")
  target text NOT NULL,
  workflow_id text,
  task text,
  reason text,
  detail jsonb
);
-- a workflow's history (braid status) reads its lines; retention deletes lines by age
CREATE INDEX audit_workflow ON {{schema}}.audit (workflow_id, id) WHERE workflow_id IS NOT NULL;
CREATE INDEX audit_at ON {{schema}}.audit (at);
-- braid:install src/runtime/sql/flow-pick.sql sha256:fe0a6cf76a8fefc4c480b178ee04f31b9a3359f7c7c3707090f498f675e8e30e
