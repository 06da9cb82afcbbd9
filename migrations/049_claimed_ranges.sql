-- Ranges of for_each siblings are claimed and completed as ranges (issue 55): a start writes the alike items of a
-- for_each that nothing depends on as one available range; a claim splits a running range off its front (one
-- insert for hundreds of items, holding the workflow row FOR KEY SHARE, so a writer's lock_workflows() waits for it
-- and a claim passes over a workflow whose ranges are being given rows), and a completion fills in each item's
-- output and finish time in its running range. Any other path an item takes gives it a row first
-- (lock_workflows()), as before.

-- The available ranges of a queue in its order (an item's place is its range's priority, schedule and id).
CREATE INDEX task_ranges_fetch ON {{schema}}.task_ranges (queue, priority, scheduled_at, first_id) WHERE state = 'available';

-- A range inserted available wakes its queue's workers, as a task row does (migration 015).
CREATE TRIGGER task_ranges_inserted_wake AFTER INSERT ON {{schema}}.task_ranges
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.tasks_inserted_wake();

-- Live views follow ranged items' changes as they follow task rows' (migration 007): a claim or a completion of
-- ranged items names their workflows on "<schema>_changed".
CREATE TRIGGER task_ranges_inserted AFTER INSERT ON {{schema}}.task_ranges
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();
CREATE TRIGGER task_ranges_updated AFTER UPDATE ON {{schema}}.task_ranges
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();
CREATE TRIGGER task_ranges_deleted AFTER DELETE ON {{schema}}.task_ranges
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.notify_changed_rows();

-- A block of n task ids in a row (a range's items' ids are first_id + (i - base)): the sequence moves past the
-- block. Ids order a workflow's tasks (they are not unique): a start taking ids meanwhile may draw one inside the
-- block, which only ties two tasks of different workflows.
CREATE FUNCTION {{schema}}.take_task_ids(n int) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v bigint := nextval('{{schema}}.tasks_id_seq');
BEGIN
  IF n > 1 THEN
    PERFORM setval('{{schema}}.tasks_id_seq', greatest(v + n - 1, (SELECT last_value FROM {{schema}}.tasks_id_seq)));
  END IF;
  RETURN v;
END
$fn$;

-- Running range r with items given their outputs (p_outs: index -> output) finished at p_at: the columns a
-- completion sets. A range whose every item finished is completed (no worker; completed by its worker). One pass
-- over the range's items (a claim keeps running ranges small: sql/range-claims.ts).
CREATE FUNCTION {{schema}}.finish_range_items(r {{schema}}.task_ranges, p_outs jsonb, p_at timestamptz)
RETURNS TABLE (outputs jsonb, finished_at timestamptz[], state text, worker_id text, completed_by text, finalized_at timestamptz)
LANGUAGE sql IMMUTABLE AS $$
  SELECT d.outputs, d.finished_at, CASE WHEN d.all_done THEN 'completed' ELSE r.state END, CASE WHEN d.all_done THEN NULL ELSE r.worker_id END,
         CASE WHEN d.all_done THEN r.worker_id ELSE r.completed_by END, CASE WHEN d.all_done THEN p_at ELSE r.finalized_at END
    FROM (SELECT jsonb_agg(CASE WHEN b.n IS NULL THEN coalesce(e.out, 'null'::jsonb) ELSE b.value END ORDER BY e.n) AS outputs,
                 array_agg(CASE WHEN b.n IS NULL THEN e.at ELSE p_at END ORDER BY e.n) AS finished_at,
                 bool_and(e.at IS NOT NULL OR b.n IS NOT NULL) FILTER (WHERE r.base + e.n - 1 >= r.lo) AS all_done
            FROM unnest(ARRAY(SELECT jsonb_array_elements(coalesce(r.outputs, '[]'::jsonb))),
                        coalesce(r.finished_at, array_fill(NULL::timestamptz, ARRAY[r.hi - r.base]))) WITH ORDINALITY AS e(out, at, n)
            LEFT JOIN (SELECT key::int - r.base + 1 AS n, value FROM jsonb_each(p_outs)) b ON b.n = e.n
           WHERE e.n <= r.hi - r.base) d
$$;

-- lock_workflows() with p_rows false locks without giving ranged items rows: for a path that writes no task of the
-- workflow (the finalization of a workflow whose tasks all ended reads them and ends the workflow).
DROP FUNCTION {{schema}}.lock_workflows(text[]);
CREATE FUNCTION {{schema}}.lock_workflows(p_ids text[], p_rows boolean DEFAULT true)
RETURNS TABLE (id text, state text, cancel_requested boolean, attempt int) LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT w.id, w.state, w.cancel_requested, w.attempt FROM {{schema}}.workflows w WHERE w.id = ANY(p_ids) ORDER BY w.id FOR UPDATE;
  IF p_rows AND EXISTS (SELECT 1 FROM {{schema}}.task_ranges r WHERE r.workflow_id = ANY(p_ids)) THEN
    PERFORM {{schema}}.unrange(p_ids);
  END IF;
END
$fn$;

-- The claim takes items from ranges, the completion completes them in their running ranges (sql/range-claims.ts,
-- sql/range-completions.ts); the completion holds its workflows FOR NO KEY UPDATE, which lets a claim of the same
-- workflow's ranges go on meanwhile. A heartbeat's abandoned items and the release of unknown claims give a
-- worker's running ranges rows first.
-- braid:install src/runtime/sql/protocol.sql sha256:c2ec6aeee8d9e3be
-- braid:generate protocol sha256:7c5dc15d01bdfc38
