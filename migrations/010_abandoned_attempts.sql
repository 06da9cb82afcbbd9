-- Attempts a live worker could not record the end of (its completion or failure kept failing): the worker
-- lists them here with each heartbeat, as [{ workflow_id, name, attempt }], and the leader rescues them as it
-- rescues a dead worker's. NULL when there are none, which is nearly always.
ALTER TABLE {{schema}}.workers ADD COLUMN abandoned jsonb;
