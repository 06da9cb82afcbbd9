-- What follows a state change, written once whichever statement makes it (issue 24). A task that becomes
-- available, inserted so or updated to it, wakes the workers of its queue; a workflow that ends wakes its
-- listeners and, when other workflows wait on it, leaves a 'finalized' effect for the leader and wakes it.
-- Channels are named after the schema (TG_TABLE_SCHEMA), so two installations in one database never wake each
-- other. Updates fire row triggers whose WHEN is decided without calling the function, so a claim of 500 rows or
-- a completion costs nothing more (a statement trigger's transition table of every updated row cost 5-10% in
-- npm run bench); an insert fires once per statement over its new rows, so a fan-out of 10,000 is one call.
CREATE FUNCTION {{schema}}.tasks_inserted_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || '_available', q.queue) FROM (SELECT DISTINCT queue FROM inserted WHERE state = 'available') q;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_inserted_wake AFTER INSERT ON {{schema}}.tasks
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.tasks_inserted_wake();

CREATE FUNCTION {{schema}}.tasks_available_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || '_available', NEW.queue);
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_available_wake AFTER UPDATE OF state ON {{schema}}.tasks
  FOR EACH ROW WHEN (NEW.state = 'available' AND OLD.state <> 'available') EXECUTE FUNCTION {{schema}}.tasks_available_wake();

CREATE FUNCTION {{schema}}.workflows_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.has_waiters THEN
    INSERT INTO {{schema}}.effects (workflow_id, kind, created_at) VALUES (NEW.id, 'finalized', NEW.finalized_at);
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_effect', NEW.id);
  END IF;
  PERFORM pg_notify(TG_TABLE_SCHEMA || '_workflow', NEW.id || ' ' || NEW.state);
  RETURN NULL;
END $$;
CREATE TRIGGER workflows_ended AFTER UPDATE OF state ON {{schema}}.workflows
  FOR EACH ROW WHEN (OLD.state = 'running' AND NEW.state <> 'running') EXECUTE FUNCTION {{schema}}.workflows_ended();
