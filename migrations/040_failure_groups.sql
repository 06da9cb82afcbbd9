-- on_failure's groups (issue 54): the failures of one workflow name with one group key start one run per window.
-- The first failure starts its run at once and opens the window; the rest are counted here and started as one run
-- when the window ends (which opens the next). A group whose window ended with nothing counted is deleted.
CREATE TABLE {{schema}}.failure_groups (
  name text NOT NULL,
  group_key text NOT NULL,
  window_ends_at timestamptz NOT NULL,
  -- failures counted since the window's run started
  pending integer NOT NULL DEFAULT 0,
  -- how many failures the row's latest change started a run for (0: it only counted one)
  started_count integer NOT NULL DEFAULT 1,
  -- the latest counted failure, its run's version and what its hook's inputs read: the window's run renders them
  last_failure jsonb,
  PRIMARY KEY (name, group_key)
);
CREATE INDEX failure_groups_due ON {{schema}}.failure_groups (window_ends_at);
