-- Searching the workflow list (issue 26): by id prefix (a business key's, `refund:r1*`), by inputs values
-- (containment, `inputs @> {"customer_id":"c1"}`), and the top-level list (workflows no start task started),
-- each newest first.
CREATE INDEX workflows_id_prefix ON {{schema}}.workflows (id text_pattern_ops);
CREATE INDEX workflows_inputs ON {{schema}}.workflows USING gin (inputs jsonb_path_ops);
CREATE INDEX workflows_top_level ON {{schema}}.workflows (created_at DESC, id DESC) WHERE parent_id IS NULL;
