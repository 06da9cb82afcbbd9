-- Live views (the web UI's server-sent events) follow changes through NOTIFY: after each statement that
-- changes tasks, signals or workflows, one notification on "<schema>_changed" names the workflows it touched
-- (ids only, space-separated; "*" when they do not fit in one notification). Postgres delivers it on commit.
CREATE FUNCTION {{schema}}.notify_changed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
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

CREATE FUNCTION {{schema}}.notify_changed_workflows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids text;
BEGIN
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

CREATE TRIGGER tasks_inserted AFTER INSERT ON {{schema}}.tasks
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();
CREATE TRIGGER tasks_updated AFTER UPDATE ON {{schema}}.tasks
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();
CREATE TRIGGER tasks_deleted AFTER DELETE ON {{schema}}.tasks
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();
CREATE TRIGGER signals_inserted AFTER INSERT ON {{schema}}.signals
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();
CREATE TRIGGER workflows_inserted AFTER INSERT ON {{schema}}.workflows
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_workflows();
CREATE TRIGGER workflows_updated AFTER UPDATE ON {{schema}}.workflows
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_workflows();
CREATE TRIGGER workflows_deleted AFTER DELETE ON {{schema}}.workflows
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_workflows();

-- The workflow list pages newest first.
CREATE INDEX workflows_created ON {{schema}}.workflows (created_at DESC, id DESC);
