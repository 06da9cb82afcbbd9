-- Tasks that need a data key (issue 54): needs_keys names the keys of the sealed values a task holds (its args
-- as inserted, or what a worker without the key found in it and gave back), so a worker's claim passes over the
-- tasks that need a key it was not given; the claim takes the worker's key ids (p_keys; null, as a worker that
-- opens no sealed value passes, claims as before; the old seven-argument claim is dropped, where a database has it,
-- so no call is ambiguous). workers.data_keys: the key ids each worker was given, so braid
-- status can say that a task waits for a worker with its key.
ALTER TABLE {{schema}}.tasks ADD COLUMN needs_keys text[];
CREATE INDEX tasks_needs_keys ON {{schema}}.tasks (kind) WHERE needs_keys IS NOT NULL;
ALTER TABLE {{schema}}.workers ADD COLUMN data_keys text[];
DROP FUNCTION IF EXISTS {{schema}}.claim(text, text[], int, text, timestamptz, bigint[], int);
-- braid:generate protocol sha256:5cc541bf61e6f1fd
