-- Change notifications cost every writing statement a NOTIFY (and Postgres serialises the commits of
-- transactions that notify), so they are sent only while some live view listens: each one registers here
-- and renews its row; the triggers check for an unexpired row first.
CREATE TABLE {{schema}}.change_listeners (
  id text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);

CREATE OR REPLACE FUNCTION {{schema}}.notify_changed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {{schema}}.change_listeners WHERE expires_at > now()) THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'DELETE' THEN
    SELECT string_agg(DISTINCT workflow_id, ' ') INTO ids FROM old_rows;
  ELSE
    SELECT string_agg(DISTINCT workflow_id, ' ') INTO ids FROM new_rows;
  END IF;
  IF ids IS NOT NULL THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_changed', CASE WHEN octet_length(ids) > 7900 THEN '*' ELSE ids END);
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION {{schema}}.notify_changed_workflows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM {{schema}}.change_listeners WHERE expires_at > now()) THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'DELETE' THEN
    SELECT string_agg(id, ' ') INTO ids FROM old_rows;
  ELSE
    SELECT string_agg(id, ' ') INTO ids FROM new_rows;
  END IF;
  IF ids IS NOT NULL THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_changed', CASE WHEN octet_length(ids) > 7900 THEN '*' ELSE ids END);
  END IF;
  RETURN NULL;
END $$;
