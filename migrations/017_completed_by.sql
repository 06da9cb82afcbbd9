-- The worker that ran a task's completed attempt (worker_id is a task's only while it runs, which rescue relies
-- on): the last entry of the task's attempt timeline. Failed attempts keep theirs in their error entries.
ALTER TABLE {{schema}}.tasks ADD COLUMN completed_by text;
