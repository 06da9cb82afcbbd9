-- Flow control (issue 28): per-key concurrency, workflow concurrency, fairness between keys and rate limits,
-- enforced by the claim. A task with flow control carries it resolved (the plan's `flow`); once available it is
-- in lane 'flow' instead of 'available', so the plain claim never sees it and pays nothing for it, and
-- flow_pick() hands such tasks out. What a key holds is read from the tasks themselves (flow_slot,
-- flow_run_slot: the key while the task has a worker), so a slot frees whichever way an attempt ends: a
-- completion, a failure, a cancel, the rescuer ending a dead worker's attempt.
--
-- No index refers to worker_id: flow_slot and flow_run_slot are NULL before and after a completion of a task
-- without flow control, so its completion stays a HOT update (migration 009).
-- (IF NOT EXISTS: a test of migration 009 recreates an older schema with today's task columns)
ALTER TABLE {{schema}}.tasks ADD COLUMN IF NOT EXISTS flow jsonb;
ALTER TABLE {{schema}}.tasks DROP COLUMN lane;
ALTER TABLE {{schema}}.tasks
  ADD COLUMN lane text GENERATED ALWAYS AS (
    CASE WHEN state = 'available' AND flow IS NOT NULL THEN 'flow'
         WHEN state IN ('pending', 'scheduled', 'available', 'retryable') THEN state END) STORED,
  ADD COLUMN flow_slot text GENERATED ALWAYS AS (CASE WHEN worker_id IS NOT NULL THEN flow #>> '{concurrency,key}' END) STORED,
  ADD COLUMN flow_run_slot text GENERATED ALWAYS AS (CASE WHEN worker_id IS NOT NULL THEN flow #>> '{workflow_concurrency,key}' END) STORED,
  -- the turn a task waits in: its fairness key, else the key of what limits it, so a key at its limit never
  -- holds back the tasks of another key queued behind it
  ADD COLUMN flow_bucket text GENERATED ALWAYS AS (
    CASE WHEN flow IS NOT NULL THEN coalesce('f ' || (flow #>> '{fairness,key}'), 'c ' || (flow #>> '{concurrency,key}'),
                                             'w ' || (flow #>> '{workflow_concurrency,key}'), 'r ' || (flow #>> '{rate_limit,key}'), '') END) STORED;
CREATE INDEX tasks_fetch ON {{schema}}.tasks (queue, priority, scheduled_at, id) WHERE lane = 'available';
CREATE INDEX tasks_due ON {{schema}}.tasks (scheduled_at) WHERE lane IN ('scheduled', 'retryable');
CREATE INDEX tasks_waiting ON {{schema}}.tasks (workflow_id) WHERE lane = 'pending' AND wait_started_at IS NOT NULL;
CREATE INDEX tasks_wait_unevaluated ON {{schema}}.tasks (workflow_id) WHERE lane = 'pending' AND wait_started_at IS NOT NULL AND wait_progress IS NULL;
-- available tasks with flow control, by queue and turn, in each turn's own order
CREATE INDEX tasks_flow ON {{schema}}.tasks (queue, flow_bucket, priority, scheduled_at, id) WHERE lane = 'flow';
CREATE INDEX tasks_flow_slot ON {{schema}}.tasks (flow_slot) WHERE flow_slot IS NOT NULL;
CREATE INDEX tasks_flow_run_slot ON {{schema}}.tasks (flow_run_slot, workflow_id) WHERE flow_run_slot IS NOT NULL;

-- Fairness: each turn's pass (tasks taken, divided by its weight) per queue, and each queue's virtual time (the
-- pass the last pick began at): a key back from idle starts at the virtual time, not where it stopped.
CREATE TABLE {{schema}}.flow_turns (
  queue text NOT NULL,
  key text NOT NULL,
  pass double precision NOT NULL,
  PRIMARY KEY (queue, key)
);
CREATE TABLE {{schema}}.flow_queues (
  queue text PRIMARY KEY,
  vtime double precision NOT NULL
);

-- Rate limits: each key's latest starts (at most its limit of them); a start needs fewer than `limit` of them
-- within the last `per`.
CREATE TABLE {{schema}}.flow_rates (
  key text PRIMARY KEY,
  starts timestamptz[] NOT NULL
);

-- How many of `starts` fall within the window that ends at `now`.
CREATE FUNCTION {{schema}}.flow_rate_used(p_starts timestamptz[], p_per_ms bigint, p_now timestamptz) RETURNS int
  LANGUAGE sql IMMUTABLE AS $$
  SELECT count(*)::int FROM unnest(p_starts) AS s WHERE s > p_now - p_per_ms * interval '1 millisecond'
$$;

-- When the next start of a key is allowed: now when a token is free, else when the oldest start that fills the
-- window leaves it.
CREATE FUNCTION {{schema}}.flow_rate_next(p_starts timestamptz[], p_limit int, p_per_ms bigint, p_now timestamptz) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN count(*) < p_limit THEN p_now
              ELSE (array_agg(s ORDER BY s DESC))[p_limit] + p_per_ms * interval '1 millisecond' END
    FROM unnest(p_starts) AS s WHERE s > p_now - p_per_ms * interval '1 millisecond'
$$;

-- Picks up to p_limit tasks of lane 'flow' of a queue to claim now: candidates in fair order (each key's next
-- tasks, by pass plus turns over weight), each taken while its concurrency key, its workflow's run key and its
-- rate key have room. A key's count is read after its advisory lock is taken, in a statement of its own (so its
-- snapshot shows every claim committed under that lock before); a key another claim holds is left to that
-- claim. The caller updates the picked tasks in the same transaction, so the locks cover the claim. A last row
-- without a task says when the earliest rate-limited key has a token again. p_dry: nothing locked or written,
-- for a look at whether anything could start (braid test's driver). p_kinds NULL: any kind.
CREATE FUNCTION {{schema}}.flow_pick(p_queue text, p_kinds text[], p_limit int, p_now timestamptz, p_dry boolean)
  RETURNS TABLE (wid text, tname text, ord int, wake timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  v_keys text[];
  v_vtime double precision;
  c record;
  v_n int := 0;
  v_key text;
  v_count int;
  v_ids jsonb;
  v_starts timestamptz[];
  v_wake timestamptz;
  v_next timestamptz;
  v_room jsonb := '{}';
  v_runs jsonb := '{}';
  v_rate jsonb := '{}';
  v_turns jsonb := '{}';
  v_picked_start double precision;
BEGIN
  IF p_limit <= 0 THEN RETURN; END IF;
  -- the turns with tasks waiting (a skip scan of tasks_flow), at most 1000 a claim
  WITH RECURSIVE k(key) AS (
    (SELECT t.flow_bucket FROM {{schema}}.tasks t WHERE t.lane = 'flow' AND t.queue = p_queue
      ORDER BY 1 LIMIT 1)
    UNION ALL
    SELECT (SELECT t.flow_bucket FROM {{schema}}.tasks t
             WHERE t.lane = 'flow' AND t.queue = p_queue AND t.flow_bucket > k.key ORDER BY 1 LIMIT 1)
      FROM k WHERE k.key IS NOT NULL
  )
  SELECT array_agg(key) INTO v_keys FROM (SELECT key FROM k WHERE key IS NOT NULL LIMIT 1000) x;
  IF v_keys IS NULL THEN RETURN; END IF;
  SELECT vtime INTO v_vtime FROM {{schema}}.flow_queues WHERE queue = p_queue;
  v_vtime := coalesce(v_vtime, 0);

  FOR c IN
    SELECT t.workflow_id, t.name, t.flow, k.key AS fkey, greatest(coalesce(f.pass, v_vtime), v_vtime) AS start,
           greatest(coalesce(f.pass, v_vtime), v_vtime)
             + (row_number() OVER (PARTITION BY k.key ORDER BY t.priority, t.scheduled_at, t.id))::double precision
               / greatest(coalesce((t.flow #>> '{fairness,weight}')::int, 1), 1) AS finish,
           t.priority, t.scheduled_at, t.id
      FROM unnest(v_keys) AS k(key)
      LEFT JOIN {{schema}}.flow_turns f ON f.queue = p_queue AND f.key = k.key
      CROSS JOIN LATERAL (
        SELECT t.workflow_id, t.name, t.flow, t.priority, t.scheduled_at, t.id FROM {{schema}}.tasks t
         WHERE t.lane = 'flow' AND t.queue = p_queue AND t.flow_bucket = k.key
           AND (p_kinds IS NULL OR t.kind = ANY(p_kinds))
         ORDER BY t.priority, t.scheduled_at, t.id LIMIT p_limit + 16 FOR UPDATE SKIP LOCKED) t
     ORDER BY finish, priority, scheduled_at, id
  LOOP
    EXIT WHEN v_n >= p_limit;
    -- concurrency: attempts of the key in flight
    v_key := c.flow #>> '{concurrency,key}';
    IF v_key IS NOT NULL THEN
      IF NOT v_room ? v_key THEN
        IF p_dry OR pg_try_advisory_xact_lock(hashtextextended('braid.flow.c ' || v_key, 0)) THEN
          SELECT count(*) INTO v_count FROM {{schema}}.tasks WHERE flow_slot = v_key;
        ELSE
          v_count := 2147483647;
        END IF;
        v_room := v_room || jsonb_build_object(v_key, v_count);
      END IF;
      CONTINUE WHEN (v_room ->> v_key)::bigint >= (c.flow #>> '{concurrency,limit}')::int;
    END IF;
    -- workflow concurrency: runs of the key with a task in flight (a run holding one may start more)
    v_key := c.flow #>> '{workflow_concurrency,key}';
    IF v_key IS NOT NULL THEN
      IF NOT v_runs ? v_key THEN
        IF p_dry OR pg_try_advisory_xact_lock(hashtextextended('braid.flow.w ' || v_key, 0)) THEN
          SELECT coalesce(jsonb_object_agg(d.workflow_id, true), '{}') INTO v_ids
            FROM (SELECT DISTINCT workflow_id FROM {{schema}}.tasks WHERE flow_run_slot = v_key) d;
        ELSE
          v_ids := '{"": false}';
        END IF;
        v_runs := v_runs || jsonb_build_object(v_key, v_ids);
      END IF;
      CONTINUE WHEN v_runs -> v_key -> '' = 'false'::jsonb;
      CONTINUE WHEN NOT (v_runs -> v_key) ? c.workflow_id
                AND (SELECT count(*) FROM jsonb_object_keys(v_runs -> v_key)) >= (c.flow #>> '{workflow_concurrency,limit}')::int;
    END IF;
    -- rate limit: tokens left in the window
    v_key := c.flow #>> '{rate_limit,key}';
    IF v_key IS NOT NULL THEN
      IF NOT v_rate ? v_key THEN
        IF p_dry OR pg_try_advisory_xact_lock(hashtextextended('braid.flow.r ' || v_key, 0)) THEN
          SELECT starts INTO v_starts FROM {{schema}}.flow_rates WHERE key = v_key;
          v_count := (c.flow #>> '{rate_limit,limit}')::int
                     - {{schema}}.flow_rate_used(coalesce(v_starts, '{}'), (c.flow #>> '{rate_limit,per_ms}')::bigint, p_now);
          v_rate := v_rate || jsonb_build_object(v_key, jsonb_build_object('left', v_count, 'taken', 0, 'flow', c.flow -> 'rate_limit'));
          IF v_count <= 0 THEN
            v_wake := least(v_wake, {{schema}}.flow_rate_next(coalesce(v_starts, '{}'), (c.flow #>> '{rate_limit,limit}')::int,
                                                                 (c.flow #>> '{rate_limit,per_ms}')::bigint, p_now));
          END IF;
        ELSE
          v_rate := v_rate || jsonb_build_object(v_key, jsonb_build_object('left', 0, 'taken', 0));
        END IF;
      END IF;
      CONTINUE WHEN (v_rate #>> ARRAY[v_key, 'left'])::int <= 0;
    END IF;

    -- taken: what it holds is counted for the candidates after it
    v_key := c.flow #>> '{concurrency,key}';
    IF v_key IS NOT NULL THEN v_room := jsonb_set(v_room, ARRAY[v_key], to_jsonb((v_room ->> v_key)::bigint + 1)); END IF;
    v_key := c.flow #>> '{workflow_concurrency,key}';
    IF v_key IS NOT NULL THEN v_runs := jsonb_set(v_runs, ARRAY[v_key, c.workflow_id], 'true'); END IF;
    v_key := c.flow #>> '{rate_limit,key}';
    IF v_key IS NOT NULL THEN
      v_rate := jsonb_set(jsonb_set(v_rate, ARRAY[v_key, 'left'], to_jsonb((v_rate #>> ARRAY[v_key, 'left'])::int - 1)),
                          ARRAY[v_key, 'taken'], to_jsonb((v_rate #>> ARRAY[v_key, 'taken'])::int + 1));
    END IF;
    v_turns := v_turns || jsonb_build_object(c.fkey, jsonb_build_object('pass', c.finish));
    v_picked_start := least(v_picked_start, c.finish - 1.0 / greatest(coalesce((c.flow #>> '{fairness,weight}')::int, 1), 1));
    v_n := v_n + 1;
    wid := c.workflow_id; tname := c.name; ord := v_n; wake := NULL;
    RETURN NEXT;
    EXIT WHEN p_dry;
  END LOOP;
  IF p_dry THEN RETURN; END IF;

  -- what the picks used: each rate key's starts (the latest `limit` of them), each fairness key's pass
  INSERT INTO {{schema}}.flow_rates AS r (key, starts)
  SELECT x.key, (SELECT array_agg(s ORDER BY s) FROM (
           SELECT s FROM unnest(coalesce((SELECT starts FROM {{schema}}.flow_rates WHERE key = x.key), '{}') || array_fill(p_now, ARRAY[x.taken])) AS s
            ORDER BY s DESC LIMIT x.lim) l)
    FROM (SELECT e.key, (e.value ->> 'taken')::int AS taken, (e.value #>> '{flow,limit}')::int AS lim
            FROM jsonb_each(v_rate) e WHERE (e.value ->> 'taken')::int > 0 ORDER BY e.key) x
  ON CONFLICT (key) DO UPDATE SET starts = excluded.starts;
  FOR v_key IN SELECT e.key FROM jsonb_each(v_rate) e WHERE (e.value ->> 'taken')::int > 0 AND (e.value ->> 'left')::int <= 0 LOOP
    SELECT {{schema}}.flow_rate_next(starts, (v_rate #>> ARRAY[v_key, 'flow', 'limit'])::int, (v_rate #>> ARRAY[v_key, 'flow', 'per_ms'])::bigint, p_now)
      INTO v_next FROM {{schema}}.flow_rates WHERE key = v_key;
    v_wake := least(v_wake, v_next);
  END LOOP;
  IF v_n > 0 THEN
    INSERT INTO {{schema}}.flow_turns AS f (queue, key, pass)
    SELECT p_queue, e.key, (e.value ->> 'pass')::double precision FROM jsonb_each(v_turns) e ORDER BY e.key
    ON CONFLICT (queue, key) DO UPDATE SET pass = greatest(f.pass, excluded.pass);
    INSERT INTO {{schema}}.flow_queues AS q (queue, vtime) VALUES (p_queue, v_picked_start)
    ON CONFLICT (queue) DO UPDATE SET vtime = greatest(q.vtime, excluded.vtime);
  END IF;
  IF v_wake IS NOT NULL THEN
    wid := NULL; tname := NULL; ord := NULL; wake := v_wake;
    RETURN NEXT;
  END IF;
END $$;

-- Debounce: a run started with a workflow's debounce key waits until debounce_until (its tasks are scheduled
-- for then); a start with the same key before then replaces its inputs and plan, and moves debounce_until on.
ALTER TABLE {{schema}}.workflows ADD COLUMN debounce_key text, ADD COLUMN debounce_until timestamptz;
CREATE INDEX workflows_debounce ON {{schema}}.workflows (name, debounce_key) WHERE debounce_key IS NOT NULL;

-- A slot that frees (an attempt with flow control ends, however it ends) may let a waiting task of its queue
-- start: the queue's workers are woken as for a task that became available.
CREATE TRIGGER tasks_flow_freed AFTER UPDATE OF worker_id ON {{schema}}.tasks
  FOR EACH ROW WHEN (OLD.flow IS NOT NULL AND OLD.worker_id IS NOT NULL AND NEW.worker_id IS NULL)
  EXECUTE FUNCTION {{schema}}.tasks_available_wake();
