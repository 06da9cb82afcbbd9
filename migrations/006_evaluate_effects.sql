-- A finalization others wait on fans out into one `evaluate` effect per waiting workflow, keyed by it and
-- applied in its own transaction (payload: the awaited workflow and the waiting tasks).
ALTER TABLE {{schema}}.effects DROP CONSTRAINT effects_kind_check;
ALTER TABLE {{schema}}.effects ADD CONSTRAINT effects_kind_check CHECK (kind IN ('start', 'cancel', 'finalized', 'evaluate'));
