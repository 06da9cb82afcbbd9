-- Dead letters (issue 40): a failed run whose definition says `retention: { failed: keep | DURATION }` is kept
-- until keep_until ('infinity' for keep) rather than by the runtime's retention period. Retention's scan of
-- finished runs leaves kept ones out of its index, so a large dead-letter set costs it nothing.
ALTER TABLE {{schema}}.workflows ADD COLUMN keep_until timestamptz;
DROP INDEX {{schema}}.workflows_finalized;
CREATE INDEX workflows_finalized ON {{schema}}.workflows (finalized_at) WHERE state <> 'running' AND keep_until IS NULL;
CREATE INDEX workflows_kept ON {{schema}}.workflows (keep_until) WHERE keep_until IS NOT NULL;

-- on_failure's start: an effect recorded in the transaction that fails the run, applied as a child start is
ALTER TABLE {{schema}}.effects DROP CONSTRAINT effects_kind_check;
ALTER TABLE {{schema}}.effects ADD CONSTRAINT effects_kind_check CHECK (kind IN ('start', 'cancel', 'finalized', 'evaluate', 'hook'));

-- A paused workflow name is tested inline where a claim reads it (a function call per candidate task cost every
-- claim a lookup while nothing was paused): flow_candidates anew, and the function goes.
DROP FUNCTION {{schema}}.workflow_paused(text);
-- braid:install src/runtime/sql/flow-pick.sql sha256:7029273da25b30f739d1bb241017b88e78f9429379dd4192bfbb6ab3dd21f7d3
