-- A task has a worker exactly while it runs. Completion statements rely on this: they find attempts by
-- (workflow_id, name, worker_id) alone, so the planner looks each one up by primary key instead of driving a
-- join from the partial index of running tasks (quadratic in a large batch when statistics lag behind).
ALTER TABLE {{schema}}.tasks ADD CONSTRAINT tasks_worker_while_running CHECK ((state = 'running') = (worker_id IS NOT NULL));
