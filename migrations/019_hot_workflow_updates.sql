-- A completion updates its workflow's open-task count; an index whose columns or predicate name that count
-- makes every such update a new row version in every index of the table (no HOT update), and the inputs
-- index of migration 018 then indexes the whole inputs again, once per completion batch. The finalize
-- sweep's index reads a flag instead, which changes once, when the last task closes.
ALTER TABLE {{schema}}.workflows ADD COLUMN tasks_done boolean GENERATED ALWAYS AS (tasks_open = 0) STORED;
DROP INDEX {{schema}}.workflows_to_finalize;
CREATE INDEX workflows_to_finalize ON {{schema}}.workflows (id) WHERE state = 'running' AND tasks_done;
-- room on each page for the updated row version, which a HOT update needs
ALTER TABLE {{schema}}.workflows SET (fillfactor = 90);
