-- A task a move's target version no longer has stays as history when it had ended (or was cancelled by
-- --cancel-removed): removed_in names the version that removed it (status, the API and the UI show it).
ALTER TABLE {{schema}}.tasks ADD COLUMN removed_in text;
