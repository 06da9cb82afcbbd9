-- The audit trail says who acted in which role and from where (issue 42), and is append-only: braid has no path
-- that changes a line, and the database refuses one (retention deletes lines by age, audit_days).
ALTER TABLE {{schema}}.audit ADD COLUMN role text, ADD COLUMN source text;
CREATE INDEX audit_actor ON {{schema}}.audit (actor, id);

CREATE FUNCTION {{schema}}.audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit lines are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_append_only BEFORE UPDATE ON {{schema}}.audit FOR EACH ROW EXECUTE FUNCTION {{schema}}.audit_append_only();
