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
                                             'w ' || (flow #>> '{workflow_concurrency,key}'), 'r ' || (flow #>> '{rate_limit,key}'), '') END) STORED,
  -- its place in its queue's fair order (start-time fair queueing): given once it waits, by flow_tag_waiting()
  ADD COLUMN flow_tag double precision;
CREATE INDEX tasks_fetch ON {{schema}}.tasks (queue, priority, scheduled_at, id) WHERE lane = 'available';
CREATE INDEX tasks_due ON {{schema}}.tasks (scheduled_at) WHERE lane IN ('scheduled', 'retryable');
CREATE INDEX tasks_waiting ON {{schema}}.tasks (workflow_id) WHERE lane = 'pending' AND wait_started_at IS NOT NULL;
CREATE INDEX tasks_wait_unevaluated ON {{schema}}.tasks (workflow_id) WHERE lane = 'pending' AND wait_started_at IS NOT NULL AND wait_progress IS NULL;
-- available tasks with flow control, by queue in fair order (those not yet placed last)
CREATE INDEX tasks_flow ON {{schema}}.tasks (queue, flow_tag, id) WHERE lane = 'flow';
CREATE INDEX tasks_flow_slot ON {{schema}}.tasks (flow_slot) WHERE flow_slot IS NOT NULL;
CREATE INDEX tasks_flow_run_slot ON {{schema}}.tasks (flow_run_slot, workflow_id) WHERE flow_run_slot IS NOT NULL;

-- Fairness: each turn's last tag per queue. A task that starts to wait is placed after its turn's last one, and
-- never before the queue's head (its first waiting tag), so a turn back from idle does not jump the queue; a
-- task weighs 1/weight, so a turn of weight 3 gets three places to another's one.
CREATE TABLE {{schema}}.flow_turns (
  queue text NOT NULL,
  key text NOT NULL,
  last_tag double precision NOT NULL,
  PRIMARY KEY (queue, key)
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

-- Places a queue's waiting tasks that have no place yet (at most p_limit a call, the oldest first): each turn's
-- after its last tag, or after the queue's head when the turn was idle, spaced by 1/weight. A start places the
-- tasks it adds; a worker places those that became available since (after deps, a retry), when its claim saw
-- some (in a statement of its own: the claim updates the same rows). Until then they come after the placed ones.
CREATE FUNCTION {{schema}}.flow_tag_waiting(p_queue text, p_limit int) RETURNS void LANGUAGE sql AS $$
  WITH head AS (
    SELECT coalesce((SELECT min(flow_tag) FROM {{schema}}.tasks WHERE lane = 'flow' AND queue = p_queue AND flow_tag IS NOT NULL),
                    (SELECT max(last_tag) FROM {{schema}}.flow_turns WHERE queue = p_queue), 0) AS tag
  ), fresh AS MATERIALIZED (
    SELECT t.ctid AS tid, t.flow_bucket AS bucket, 1.0 / greatest(coalesce((t.flow #>> '{fairness,weight}')::int, 1), 1) AS step,
           t.priority, t.scheduled_at, t.id
      FROM {{schema}}.tasks t WHERE t.lane = 'flow' AND t.queue = p_queue AND t.flow_tag IS NULL
     ORDER BY t.flow_tag, t.id LIMIT p_limit FOR UPDATE SKIP LOCKED
  ), placed AS (
    SELECT f.tid, f.bucket,
           greatest(coalesce(ft.last_tag, h.tag), h.tag) + sum(f.step) OVER (PARTITION BY f.bucket ORDER BY f.priority, f.scheduled_at, f.id) AS tag
      FROM fresh f CROSS JOIN head h LEFT JOIN {{schema}}.flow_turns ft ON ft.queue = p_queue AND ft.key = f.bucket
  ), tagged AS (
    UPDATE {{schema}}.tasks t SET flow_tag = p.tag FROM placed p WHERE t.ctid = p.tid
  )
  INSERT INTO {{schema}}.flow_turns AS ft (queue, key, last_tag)
  SELECT p_queue, bucket, max(tag) FROM placed GROUP BY bucket ORDER BY bucket
  ON CONFLICT (queue, key) DO UPDATE SET last_tag = greatest(ft.last_tag, excluded.last_tag)
$$;

-- Picks up to p_limit tasks of lane 'flow' of a queue to claim now. The candidates are the queue's first
-- waiting tasks in fair order (one index range, as a plain claim reads); each is taken while its concurrency
-- key, its workflow's run key and its rate key have room. The keys are locked first (advisory locks, one per
-- key, tried: a key another claim holds is left to that claim, as full), then what they hold is read, and the
-- picks made, in a statement of its own, whose snapshot shows every claim committed under those locks before.
-- The caller updates the picked tasks in the same transaction, so the locks cover the claim. A last row without
-- a task says when the earliest rate-limited key has a token again. p_dry: nothing locked or written, for a
-- look at whether anything could start (braid test's driver). p_kinds NULL: any kind.
CREATE FUNCTION {{schema}}.flow_pick(p_queue text, p_kinds text[], p_limit int, p_now timestamptz, p_dry boolean)
  RETURNS TABLE (wid text, tname text, ord int, wake timestamptz) LANGUAGE plpgsql ROWS 16 AS $$
DECLARE
  v_window int := least(p_limit + 16, 1000);
  v_keys text[];
  v_full boolean;
  v_wids text[];
  v_names text[];
  v_rkeys text[];
  v_rlims int[];
  v_blocked jsonb;
  v_wake timestamptz;
BEGIN
  IF p_limit <= 0 THEN RETURN; END IF;
  -- the keys the first waiting tasks in fair order name, each locked unless another claim holds it; and whether
  -- any has more than a concurrency limit (the picks below are simpler without)
  SELECT coalesce(array_agg(k.kind || k.key) FILTER (WHERE p_dry OR pg_try_advisory_xact_lock(hashtextextended('braid.flow.' || k.kind || k.key, 0))), '{}'),
         coalesce(bool_or(k.kind <> 'c '), false)
    INTO v_keys, v_full
    FROM (SELECT DISTINCT x.kind, x.key
            FROM (SELECT t.flow FROM {{schema}}.tasks t
                   WHERE t.lane = 'flow' AND t.queue = p_queue AND (p_kinds IS NULL OR t.kind = ANY(p_kinds))
                   ORDER BY t.flow_tag, t.id LIMIT v_window) c
            CROSS JOIN LATERAL (VALUES ('c ', c.flow #>> '{concurrency,key}'), ('w ', c.flow #>> '{workflow_concurrency,key}'),
                                       ('r ', c.flow #>> '{rate_limit,key}')) x(kind, key)
           WHERE x.key IS NOT NULL ORDER BY 1, 2) k;

  -- then, after the locks (a statement of its own): what each key holds, and the candidates each has room for,
  -- in fair order; a key not locked has none
  IF NOT v_full THEN
    WITH cand AS (
      SELECT t.workflow_id AS w, t.name AS n, t.flow_tag, t.id, t.flow #>> '{concurrency,key}' AS ckey, (t.flow #>> '{concurrency,limit}')::int AS clim
        FROM {{schema}}.tasks t
       WHERE t.lane = 'flow' AND t.queue = p_queue AND (p_kinds IS NULL OR t.kind = ANY(p_kinds))
       ORDER BY t.flow_tag, t.id LIMIT v_window
    ), held AS (
      SELECT flow_slot AS key, count(*)::int AS n FROM {{schema}}.tasks
       WHERE flow_slot = ANY(ARRAY(SELECT substr(k, 3) FROM unnest(v_keys) k)) GROUP BY 1
    )
    SELECT array_agg(x.w ORDER BY x.flow_tag, x.id), array_agg(x.n ORDER BY x.flow_tag, x.id) INTO v_wids, v_names
      FROM (SELECT c.* FROM (SELECT c.*, row_number() OVER (PARTITION BY c.ckey ORDER BY c.flow_tag, c.id) AS rank FROM cand c) c
              LEFT JOIN held h ON h.key = c.ckey
             WHERE c.ckey IS NULL OR (('c ' || c.ckey) = ANY(v_keys) AND c.rank <= c.clim - coalesce(h.n, 0))
             ORDER BY c.flow_tag, c.id LIMIT CASE WHEN p_dry THEN 1 ELSE p_limit END) x;
  ELSE
    WITH cand AS (
      SELECT t.workflow_id AS w, t.name AS n, t.flow_tag, t.id,
             t.flow #>> '{concurrency,key}' AS ckey, (t.flow #>> '{concurrency,limit}')::int AS clim,
             t.flow #>> '{workflow_concurrency,key}' AS wkey, (t.flow #>> '{workflow_concurrency,limit}')::int AS wlim,
             t.flow #>> '{rate_limit,key}' AS rkey, (t.flow #>> '{rate_limit,limit}')::int AS rlim, (t.flow #>> '{rate_limit,per_ms}')::bigint AS rper
        FROM {{schema}}.tasks t
       WHERE t.lane = 'flow' AND t.queue = p_queue AND (p_kinds IS NULL OR t.kind = ANY(p_kinds))
       ORDER BY t.flow_tag, t.id LIMIT v_window
    ), held_c AS (
      SELECT flow_slot AS key, count(*)::int AS n FROM {{schema}}.tasks
       WHERE flow_slot = ANY(ARRAY(SELECT substr(k, 3) FROM unnest(v_keys) k WHERE k LIKE 'c %')) GROUP BY 1
    ), held_w AS (
      SELECT flow_run_slot AS key, array_agg(DISTINCT workflow_id) AS ids FROM {{schema}}.tasks
       WHERE flow_run_slot = ANY(ARRAY(SELECT substr(k, 3) FROM unnest(v_keys) k WHERE k LIKE 'w %')) GROUP BY 1
    ), held_r AS (
      SELECT key, starts FROM {{schema}}.flow_rates WHERE key = ANY(ARRAY(SELECT substr(k, 3) FROM unnest(v_keys) k WHERE k LIKE 'r %'))
    ), scored AS (
      SELECT c.*,
             CASE WHEN c.ckey IS NULL THEN NULL WHEN ('c ' || c.ckey) = ANY(v_keys) THEN c.clim - coalesce(hc.n, 0) ELSE 0 END AS c_room,
             row_number() OVER (PARTITION BY c.ckey ORDER BY c.flow_tag, c.id) AS c_rank,
             CASE WHEN c.wkey IS NULL THEN NULL WHEN ('w ' || c.wkey) = ANY(v_keys) THEN c.wlim - coalesce(cardinality(hw.ids), 0) ELSE 0 END AS w_room,
             c.w = ANY(coalesce(hw.ids, '{}')) AS w_holds,
             CASE WHEN c.rkey IS NULL THEN NULL
                  WHEN ('r ' || c.rkey) = ANY(v_keys) THEN c.rlim - {{schema}}.flow_rate_used(coalesce(hr.starts, '{}'), c.rper, p_now) ELSE 0 END AS r_room,
             row_number() OVER (PARTITION BY c.rkey ORDER BY c.flow_tag, c.id) AS r_rank
        FROM cand c
        LEFT JOIN held_c hc ON hc.key = c.ckey
        LEFT JOIN held_w hw ON hw.key = c.wkey
        LEFT JOIN held_r hr ON hr.key = c.rkey
    ), runs AS (
      -- a run not holding its key's slot yet takes one of the slots left, runs in the order they come
      SELECT s.*, dense_rank() OVER (PARTITION BY s.wkey, s.w_holds ORDER BY s.first) AS w_rank
        FROM (SELECT s.*, min(row(s.flow_tag, s.id)::text) OVER (PARTITION BY s.wkey, s.w) AS first FROM scored s) s
    )
    , picked AS (
      SELECT r.* FROM runs r
       WHERE (r.c_room IS NULL OR r.c_rank <= r.c_room)
         AND (r.w_room IS NULL OR r.w_holds OR r.w_rank <= r.w_room)
         AND (r.r_room IS NULL OR r.r_rank <= r.r_room)
       ORDER BY r.flow_tag, r.id LIMIT CASE WHEN p_dry THEN 1 ELSE p_limit END
    )
    SELECT array_agg(x.w ORDER BY x.flow_tag, x.id), array_agg(x.n ORDER BY x.flow_tag, x.id),
           array_agg(x.rkey ORDER BY x.flow_tag, x.id), array_agg(x.rlim ORDER BY x.flow_tag, x.id),
           -- the rate keys locked here that leave a candidate waiting: the claim says when their next token frees
           (SELECT jsonb_object_agg(b.rkey, jsonb_build_array(b.rlim, b.rper)) FROM runs b
             WHERE b.rkey IS NOT NULL AND ('r ' || b.rkey) = ANY(v_keys) AND NOT EXISTS (SELECT 1 FROM picked p WHERE p.w = b.w AND p.n = b.n))
      INTO v_wids, v_names, v_rkeys, v_rlims, v_blocked
      FROM picked x;
  END IF;

  RETURN QUERY SELECT p.w, p.n, p.i::int, NULL::timestamptz FROM unnest(v_wids, v_names) WITH ORDINALITY AS p(w, n, i);
  IF p_dry OR NOT v_full THEN RETURN; END IF;

  -- each rate key's starts: the latest `limit` of them, with this claim's; then when the next token frees, for
  -- the rate keys that left a task waiting
  WITH used AS (
    SELECT k AS key, count(*)::int AS taken, max(l) AS lim FROM unnest(v_rkeys, v_rlims) AS p(k, l) WHERE k IS NOT NULL GROUP BY k
  ), written AS (
    INSERT INTO {{schema}}.flow_rates AS r (key, starts)
    SELECT u.key, (SELECT array_agg(s ORDER BY s) FROM (
             SELECT s FROM unnest(coalesce((SELECT starts FROM {{schema}}.flow_rates WHERE key = u.key), '{}') || array_fill(p_now, ARRAY[u.taken])) AS s
              ORDER BY s DESC LIMIT u.lim) l)
      FROM used u ORDER BY u.key
    ON CONFLICT (key) DO UPDATE SET starts = excluded.starts
    RETURNING r.key, r.starts
  )
  SELECT min({{schema}}.flow_rate_next(coalesce(w.starts, r.starts, '{}'), (b.value ->> 0)::int, (b.value ->> 1)::bigint, p_now)) INTO v_wake
    FROM jsonb_each(coalesce(v_blocked, '{}')) b LEFT JOIN written w ON w.key = b.key LEFT JOIN {{schema}}.flow_rates r ON r.key = b.key;
  IF v_wake IS NOT NULL AND v_wake > p_now THEN
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
