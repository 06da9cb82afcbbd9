-- A workflow's end is announced on "<schema>_workflow" only when something waits for it (issue 55): a waiter
-- (waitUntilFinal: rt.result(), braid start --wait, the API's result) marks the row watched before it reads the
-- state. A notification per ended workflow cost every completion batch of one-task workflows ~5 µs of server
-- CPU a workflow (500 notifications queued at each commit), and nearly all of them had no listener. The
-- trigger is not called at all for a workflow that nobody watches and nobody waits on (its WHEN says so).
ALTER TABLE {{schema}}.workflows ADD COLUMN watched boolean NOT NULL DEFAULT false;
CREATE OR REPLACE FUNCTION {{schema}}.workflows_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.has_waiters THEN
    INSERT INTO {{schema}}.effects (workflow_id, kind, created_at) VALUES (NEW.id, 'finalized', NEW.finalized_at);
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_effect', NEW.id);
  END IF;
  IF NEW.watched THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '_workflow', NEW.id || ' ' || NEW.state);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER workflows_ended ON {{schema}}.workflows;
CREATE TRIGGER workflows_ended AFTER UPDATE OF state ON {{schema}}.workflows
  FOR EACH ROW WHEN (OLD.state = 'running' AND NEW.state <> 'running' AND (NEW.has_waiters OR NEW.watched))
  EXECUTE FUNCTION {{schema}}.workflows_ended();
