-- A large output (over 64 KiB of JSON) is marked with its size: a claim then hands dependents its name, not
-- its value, so no claim or completion batch carries megabytes, and the worker reads it on its own. Postgres
-- keeps such a value out of line (TOAST), so the row stays narrow and its updates never copy it. NULL (no
-- bytes in the row) for every other output.
ALTER TABLE {{schema}}.tasks ADD COLUMN output_bytes int;
