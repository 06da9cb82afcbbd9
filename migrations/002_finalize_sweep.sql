-- Workflows whose last task just closed and that wait for their output to be evaluated: the completion path
-- finalizes them right after, and the leader finds any that a crash left behind.
CREATE INDEX workflows_to_finalize ON {{schema}}.workflows (id) WHERE state = 'running' AND tasks_open = 0;
