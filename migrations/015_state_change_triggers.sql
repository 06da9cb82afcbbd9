-- What follows a state change, written once whichever statement makes it (issue 24). A task updated to
-- available wakes the workers of its queue; a workflow that ends wakes its listeners and, when other workflows
-- wait on it, leaves a 'finalized' effect for the leader and wakes it. Channels are named after the schema
-- (TG_TABLE_SCHEMA), so two installations in one database never wake each other. Row triggers whose WHEN
-- is decided without calling the function: a claim of 500 rows or a completion costs nothing more, where a
-- statement trigger's transition table of every updated row cost 5-10% in npm run bench. (Tasks inserted
-- available wake their queues in sql/insert.ts, the one statement that inserts tasks: a transition table of
-- 20,000 new rows cost as much.)
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
