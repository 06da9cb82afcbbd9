-- A workflow's timeout (from its definition, in ms), when its current attempt times out, and why it ended
-- when its state alone does not say (end_reason 'timeout': it failed because its deadline passed first).
ALTER TABLE {{schema}}.workflows ADD COLUMN timeout_ms bigint, ADD COLUMN deadline_at timestamptz, ADD COLUMN end_reason text;
CREATE INDEX workflows_deadline ON {{schema}}.workflows (deadline_at) WHERE state = 'running' AND deadline_at IS NOT NULL;
