-- Two additions to the language (issue 16): conditional tasks, and args rendered from deps when the task runs.

-- Conditional tasks: a task's `when` (raw CEL) is evaluated once every dep is final; false ends it `skipped`,
-- a final state that is not a failure. condition_met records the decision (NULL until made, and again after a
-- workflow retry re-runs the task), so a task with a wait is not decided twice. ignore_skipped_deps lets a
-- skipped dep satisfy its dependent instead of skipping it too.
ALTER TABLE {{schema}}.tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE {{schema}}.tasks ADD CONSTRAINT tasks_state_check
  CHECK (state IN ('pending', 'scheduled', 'available', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'skipped')) NOT VALID;
ALTER TABLE {{schema}}.tasks VALIDATE CONSTRAINT tasks_state_check;
ALTER TABLE {{schema}}.tasks ADD COLUMN condition text, ADD COLUMN condition_met boolean, ADD COLUMN ignore_skipped_deps boolean NOT NULL DEFAULT false;
-- What a crash left undecided (the sweeper's look-up). Neither state nor deps_left is in it, so a completion
-- and the deps_left it lowers stay HOT updates; the few rows that ended undecided (skipped or cancelled by a
-- dep) stay in it until retention takes them.
CREATE INDEX tasks_condition_undecided ON {{schema}}.tasks (workflow_id) WHERE condition IS NOT NULL AND condition_met IS NULL;
-- Args and metadata templates that read deps are rendered when the task runs: `deferred` keeps the pointers of
-- those strings, the templates as written, and a for_each expansion's item and index (cel/deferred.ts).
ALTER TABLE {{schema}}.tasks ADD COLUMN deferred jsonb;
