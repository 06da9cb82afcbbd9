-- flow_pick: which of a queue's waiting tasks with flow control a claim hands out now (the claim's rule; its
-- twin in words is src/runtime/flow/reason.ts, what status says, and test/runtime/flow-twin.test.ts holds them to
-- one table of cases). Installed by the migrations that name this file (`-- braid:install`), {{schema}} filled:
-- a change here is this file's diff plus a new migration naming it with the file's new sha256, for databases
-- that applied the earlier ones (migrate.ts refuses a file whose latest naming has another hash).

-- A window of a queue's waiting tasks in fair order (placed ones by tag, then those not placed yet), after
-- (p_tag, p_id) among the placed and p_untagged among the others: one index range each, passing over tasks of a
-- paused workflow name (braid pause --workflow: its first test reads no task, so it is evaluated once while no
-- name is paused; the claim leaves paused queues and kinds out before it asks).
-- Plain SQL: inlined into the statements that read it.
CREATE OR REPLACE FUNCTION {{schema}}.flow_candidates(p_queue text, p_kinds text[], p_tag double precision, p_id bigint, p_untagged bigint, p_limit int)
  RETURNS TABLE (w text, n text, tag double precision, id bigint, flow jsonb) LANGUAGE sql STABLE AS $$
  SELECT x.* FROM (
    (SELECT t.workflow_id, t.name, t.flow_tag, t.id, t.flow FROM {{schema}}.tasks t
      WHERE t.lane = 'flow' AND t.flow_parked IS NULL AND t.queue = p_queue AND (p_kinds IS NULL OR t.kind = ANY(p_kinds))
        AND (t.flow_tag, t.id) > (p_tag, p_id) AND NOT (EXISTS (SELECT 1 FROM {{schema}}.pauses WHERE scope = 'workflow')
             AND EXISTS (SELECT 1 FROM {{schema}}.workflows w JOIN {{schema}}.pauses p ON p.scope = 'workflow' AND p.target = w.name WHERE w.id = t.workflow_id))
      ORDER BY t.flow_tag, t.id LIMIT p_limit)
    UNION ALL
    (SELECT t.workflow_id, t.name, t.flow_tag, t.id, t.flow FROM {{schema}}.tasks t
      WHERE t.lane = 'flow' AND t.flow_parked IS NULL AND t.queue = p_queue AND (p_kinds IS NULL OR t.kind = ANY(p_kinds))
        AND t.flow_tag IS NULL AND t.id > p_untagged AND NOT (EXISTS (SELECT 1 FROM {{schema}}.pauses WHERE scope = 'workflow')
             AND EXISTS (SELECT 1 FROM {{schema}}.workflows w JOIN {{schema}}.pauses p ON p.scope = 'workflow' AND p.target = w.name WHERE w.id = t.workflow_id))
      ORDER BY t.flow_tag, t.id LIMIT p_limit)) x
  ORDER BY x.flow_tag, x.id LIMIT p_limit
$$;

-- A window of candidates (flow_candidates: one index range each for the placed and the not-yet-placed), each
-- with its keys and limits as stored, and why its flow control cannot be enforced (NULL when it can). Plain SQL,
-- so it is inlined into the statements of flow_pick that read it.
CREATE OR REPLACE FUNCTION {{schema}}.flow_window(p_queue text, p_kinds text[], p_tag double precision, p_id bigint, p_untagged bigint, p_limit int)
  RETURNS TABLE (w text, n text, tag double precision, id bigint, flow jsonb, bad text, ckey text, clim int, wkey text, wlim int,
                 rkey text, rlim int, rper bigint) LANGUAGE sql STABLE AS $$
  SELECT c.w, c.n, c.tag, c.id, c.flow, {{schema}}.flow_unreadable(c.flow),
         c.flow #>> '{concurrency,key}', {{schema}}.flow_count(c.flow #> '{concurrency,limit}'),
         c.flow #>> '{workflow_concurrency,key}', {{schema}}.flow_count(c.flow #> '{workflow_concurrency,limit}'),
         c.flow #>> '{rate_limit,key}', {{schema}}.flow_count(c.flow #> '{rate_limit,limit}'), {{schema}}.flow_per_ms(c.flow #> '{rate_limit,per_ms}')
    FROM {{schema}}.flow_candidates(p_queue, p_kinds, p_tag, p_id, p_untagged, p_limit) c
$$;

-- Picks up to p_limit tasks of lane 'flow' of a queue to claim now, in fair order, each while its concurrency
-- key, its workflow's run key and its rate key have room. A look is a window of the first waiting tasks (one
-- index range); their keys are locked (advisory locks, tried: a key another claim holds is left to it, as full),
-- then what the keys hold is read and the picks made in a statement of its own, whose snapshot shows every
-- claim committed under those locks. Candidates of a key found full are parked (they leave the range), and
-- when a window yields nothing the next one is looked at, up to 256 candidates a claim (10,000 for p_dry), so
-- a free key behind any number of full ones is reached. The caller updates the picked tasks in the same
-- transaction, so the locks cover the claim. Rows without a task: when the earliest rate-limited key has a
-- token again, or p_now itself when this claim parked tasks and stopped at its bound (claim again at once).
-- A task whose flow control cannot be read is picked with `bad` saying why. p_dry: nothing locked or written,
-- for a look at whether anything could start (braid test's driver). p_kinds NULL: any kind.
CREATE OR REPLACE FUNCTION {{schema}}.flow_pick(p_queue text, p_kinds text[], p_limit int, p_now timestamptz, p_dry boolean)
  RETURNS TABLE (wid text, tname text, ord int, wake timestamptz, bad text, waited boolean) LANGUAGE plpgsql ROWS 16 AS $$
#variable_conflict use_column
DECLARE
  v_window int := least(p_limit + 16, 1000);
  v_budget int := CASE WHEN p_dry THEN 10000 ELSE greatest(least(p_limit + 16, 1000), 256) END;
  v_seen int := 0;
  v_tag double precision := '-Infinity';
  v_id bigint := 0;
  v_untagged bigint := 0;
  v_count int;
  v_last_tag double precision;
  v_last_id bigint;
  v_keys text[] := '{}';
  v_full boolean;
  v_wids text[];
  v_names text[];
  v_bads text[];
  v_waits boolean[];
  v_waiting text[];
  v_skipped int;
  v_rkeys text[];
  v_rlims int[];
  v_rpers bigint[];
  v_blocked jsonb;
  v_park_w text[];
  v_park_n text[];
  v_park_k text[];
  v_parked int := 0;
  v_wake timestamptz;
BEGIN
  IF p_limit <= 0 THEN RETURN; END IF;
  LOOP
    -- the window's keys, each locked unless another claim holds it; how many candidates it has and its last;
    -- whether any has more than a concurrency limit (the picks are simpler without)
    WITH cand AS MATERIALIZED (SELECT c.tag, c.id, c.flow, c.ckey, c.wkey, c.rkey
                                 FROM {{schema}}.flow_window(p_queue, p_kinds, v_tag, v_id, v_untagged, v_window) c)
    SELECT v_keys || coalesce((
             SELECT array_agg(k.kind || k.key) FILTER (WHERE p_dry OR pg_try_advisory_xact_lock(hashtextextended('braid.flow.' || k.kind || k.key, 0)))
               FROM (SELECT DISTINCT x.kind, x.key FROM cand c
                       CROSS JOIN LATERAL (VALUES ('c ', c.ckey), ('w ', c.wkey), ('r ', c.rkey)) x(kind, key)
                      WHERE x.key IS NOT NULL AND NOT (x.kind || x.key) = ANY(v_keys) ORDER BY 1, 2) k), '{}'),
           (SELECT count(*)::int FROM cand),
           (SELECT c.tag FROM cand c ORDER BY c.tag DESC NULLS FIRST, c.id DESC LIMIT 1),
           (SELECT c.id FROM cand c ORDER BY c.tag DESC NULLS FIRST, c.id DESC LIMIT 1),
           (SELECT coalesce(bool_or(c.flow ? 'workflow_concurrency' OR c.flow ? 'rate_limit'), false) FROM cand c),
           -- the keys with tasks parked on them: a pick of one is marked, so its end unparks one
           (SELECT array_agg(k.key) FROM (SELECT DISTINCT x.key FROM cand c CROSS JOIN LATERAL (VALUES ('c ' || c.ckey), ('w ' || c.wkey)) x(key)
                                           WHERE x.key IS NOT NULL) k
             WHERE EXISTS (SELECT 1 FROM {{schema}}.tasks p WHERE p.lane = 'flow' AND p.flow_parked = k.key))
      INTO v_keys, v_count, v_last_tag, v_last_id, v_full, v_waiting;
    EXIT WHEN v_count = 0;
    v_seen := v_seen + v_count;

    -- then, after the locks (a statement of its own): what each key holds, and the candidates that fit
    IF NOT v_full THEN
      WITH cand AS (
        SELECT * FROM {{schema}}.flow_window(p_queue, p_kinds, v_tag, v_id, v_untagged, v_window)
      ), held AS (
        SELECT flow_slot AS key, count(*)::int AS n FROM {{schema}}.tasks
         WHERE flow_slot = ANY(ARRAY(SELECT substr(k, 3) FROM unnest(v_keys) k WHERE k LIKE 'c %')) GROUP BY 1
      ), ranked AS (
        SELECT c.*, c.clim - coalesce(h.n, 0) AS room, row_number() OVER (PARTITION BY c.ckey, c.bad IS NULL ORDER BY c.tag, c.id) AS rank
          FROM cand c LEFT JOIN held h ON h.key = c.ckey
      ), picked AS (
        SELECT r.* FROM ranked r
         WHERE r.bad IS NOT NULL OR r.ckey IS NULL OR (('c ' || r.ckey) = ANY(v_keys) AND r.rank <= r.room)
         ORDER BY r.tag, r.id LIMIT CASE WHEN p_dry THEN 1 ELSE p_limit END
      ), parkable AS (
        -- left waiting because its key was full when this claim looked: parked on it (a key this claim fills
        -- parks its waiting tasks at the next look)
        SELECT r.w, r.n, 'c ' || r.ckey AS key FROM ranked r WHERE NOT p_dry AND r.room <= 0 AND ('c ' || r.ckey) = ANY(v_keys)
      )
      SELECT array_agg(x.w ORDER BY x.tag, x.id), array_agg(x.n ORDER BY x.tag, x.id), array_agg(x.bad ORDER BY x.tag, x.id),
             array_agg(coalesce(('c ' || x.ckey) = ANY(v_waiting), false) ORDER BY x.tag, x.id),
             NULL, NULL, NULL, NULL,
             (SELECT array_agg(k.w) FROM parkable k), (SELECT array_agg(k.n) FROM parkable k), (SELECT array_agg(k.key) FROM parkable k)
        INTO v_wids, v_names, v_bads, v_waits, v_rkeys, v_rlims, v_rpers, v_blocked, v_park_w, v_park_n, v_park_k
        FROM picked x;
    ELSE
      WITH cand AS (
        SELECT * FROM {{schema}}.flow_window(p_queue, p_kinds, v_tag, v_id, v_untagged, v_window)
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
               row_number() OVER (PARTITION BY c.ckey ORDER BY c.tag, c.id) AS c_rank,
               CASE WHEN c.wkey IS NULL THEN NULL WHEN ('w ' || c.wkey) = ANY(v_keys) THEN c.wlim - coalesce(cardinality(hw.ids), 0) ELSE 0 END AS w_room,
               c.w = ANY(coalesce(hw.ids, '{}')) AS w_holds,
               CASE WHEN c.rkey IS NULL THEN NULL
                    WHEN ('r ' || c.rkey) = ANY(v_keys) THEN c.rlim - {{schema}}.flow_rate_used(coalesce(hr.starts, '{}'), c.rper, p_now) ELSE 0 END AS r_room,
               row_number() OVER (PARTITION BY c.rkey ORDER BY c.tag, c.id) AS r_rank
          FROM cand c
          LEFT JOIN held_c hc ON hc.key = c.ckey
          LEFT JOIN held_w hw ON hw.key = c.wkey
          LEFT JOIN held_r hr ON hr.key = c.rkey
         WHERE c.bad IS NULL
      ), runs AS (
        -- a run not holding its key's slot yet takes one of the slots left, runs in the order they come
        SELECT s.*, dense_rank() OVER (PARTITION BY s.wkey, s.w_holds ORDER BY s.first) AS w_rank
          FROM (SELECT s.*, min(row(s.tag, s.id)::text) OVER (PARTITION BY s.wkey, s.w) AS first FROM scored s) s
      ), picked AS (
        SELECT x.* FROM (
          SELECT r.w, r.n, r.tag, r.id, NULL::text AS bad, r.ckey, r.wkey, r.rkey, r.rlim, r.rper FROM runs r
           WHERE (r.c_room IS NULL OR r.c_rank <= r.c_room)
             AND (r.w_room IS NULL OR r.w_holds OR r.w_rank <= r.w_room)
             AND (r.r_room IS NULL OR r.r_rank <= r.r_room)
          UNION ALL
          SELECT c.w, c.n, c.tag, c.id, c.bad, NULL, NULL, NULL, NULL, NULL FROM cand c WHERE c.bad IS NOT NULL) x
         ORDER BY x.tag, x.id LIMIT CASE WHEN p_dry THEN 1 ELSE p_limit END
      ), parkable AS (
        -- left waiting because its key was full when this claim looked: parked on that key
        SELECT r.w, r.n, CASE WHEN r.c_room <= 0 AND ('c ' || r.ckey) = ANY(v_keys) THEN 'c ' || r.ckey
                              WHEN r.w_room <= 0 AND ('w ' || r.wkey) = ANY(v_keys) AND NOT r.w_holds THEN 'w ' || r.wkey END AS key
          FROM runs r WHERE NOT p_dry
      )
      SELECT array_agg(x.w ORDER BY x.tag, x.id), array_agg(x.n ORDER BY x.tag, x.id), array_agg(x.bad ORDER BY x.tag, x.id),
             array_agg(coalesce(('c ' || x.ckey) = ANY(v_waiting) OR ('w ' || x.wkey) = ANY(v_waiting), false) ORDER BY x.tag, x.id),
             array_agg(x.rkey ORDER BY x.tag, x.id), array_agg(x.rlim ORDER BY x.tag, x.id), array_agg(x.rper ORDER BY x.tag, x.id),
             -- the rate keys locked here that leave a candidate waiting: the claim says when their next token frees
             (SELECT jsonb_object_agg(b.rkey, jsonb_build_array(b.rlim, b.rper)) FROM runs b
               WHERE b.rkey IS NOT NULL AND ('r ' || b.rkey) = ANY(v_keys) AND NOT EXISTS (SELECT 1 FROM picked p WHERE p.w = b.w AND p.n = b.n)),
             (SELECT array_agg(k.w) FROM parkable k WHERE k.key IS NOT NULL),
             (SELECT array_agg(k.n) FROM parkable k WHERE k.key IS NOT NULL),
             (SELECT array_agg(k.key) FROM parkable k WHERE k.key IS NOT NULL)
        INTO v_wids, v_names, v_bads, v_waits, v_rkeys, v_rlims, v_rpers, v_blocked, v_park_w, v_park_n, v_park_k
        FROM picked x;
    END IF;

    IF v_park_w IS NOT NULL THEN
      UPDATE {{schema}}.tasks t SET flow_parked = p.k
        FROM unnest(v_park_w, v_park_n, v_park_k) AS p(w, n, k)
       WHERE t.ctid = ANY(ARRAY(SELECT x.ctid FROM {{schema}}.tasks x JOIN unnest(v_park_w, v_park_n) AS q(w, n) ON x.workflow_id = q.w AND x.name = q.n
                                 WHERE x.lane = 'flow' FOR UPDATE OF x SKIP LOCKED))
         AND t.workflow_id = p.w AND t.name = p.n;
      v_parked := v_parked + cardinality(v_park_w);
      -- the running tasks of the keys parked on are marked, so their ends unpark; one this claim cannot lock (it
      -- is ending now) is left to the leader, which unparks as far as the key has room
      WITH keys AS (
        SELECT DISTINCT k FROM unnest(v_park_k) AS k
      ), holders AS (
        SELECT t.ctid AS tid FROM {{schema}}.tasks t
         WHERE t.flow_slot = ANY(ARRAY(SELECT substr(k, 3) FROM keys WHERE k LIKE 'c %')) AND NOT t.flow_waited
        UNION
        SELECT t.ctid FROM {{schema}}.tasks t
         WHERE t.flow_run_slot = ANY(ARRAY(SELECT substr(k, 3) FROM keys WHERE k LIKE 'w %')) AND NOT t.flow_waited
      ), marked AS (
        UPDATE {{schema}}.tasks t SET flow_waited = true
         WHERE t.ctid = ANY(ARRAY(SELECT x.ctid FROM {{schema}}.tasks x WHERE x.ctid = ANY(ARRAY(SELECT tid FROM holders))
                                   AND x.worker_id IS NOT NULL FOR UPDATE SKIP LOCKED))
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM holders) - (SELECT count(*) FROM marked) INTO v_skipped;
      IF v_skipped > 0 THEN
        INSERT INTO {{schema}}.flow_missed_frees (key) SELECT DISTINCT k FROM unnest(v_park_k) AS k;
      END IF;
    END IF;

    EXIT WHEN v_wids IS NOT NULL OR v_count < v_window OR v_seen >= v_budget;
    IF v_last_tag IS NULL THEN
      v_tag := 'Infinity';
      v_untagged := v_last_id;
    ELSE
      v_tag := v_last_tag;
      v_id := v_last_id;
    END IF;
  END LOOP;

  RETURN QUERY SELECT p.w, p.n, p.i::int, NULL::timestamptz, p.b, p.x FROM unnest(v_wids, v_names, v_bads, v_waits) WITH ORDINALITY AS p(w, n, b, x, i);
  IF p_dry THEN RETURN; END IF;

  -- each rate key's starts: the latest `limit` of them, with this claim's; then when the next token frees, for
  -- the rate keys that left a task waiting
  IF v_blocked IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(v_rkeys) k WHERE k IS NOT NULL) THEN
    WITH used AS (
      SELECT k AS key, count(*)::int AS taken, max(l) AS lim, max(w) AS per FROM unnest(v_rkeys, v_rlims, v_rpers) AS p(k, l, w) WHERE k IS NOT NULL GROUP BY k
    ), written AS (
      INSERT INTO {{schema}}.flow_rates AS r (key, starts, expires_at)
      SELECT u.key, (SELECT array_agg(s ORDER BY s) FROM (
               SELECT s FROM unnest(coalesce((SELECT starts FROM {{schema}}.flow_rates WHERE key = u.key), '{}') || array_fill(p_now, ARRAY[u.taken])) AS s
                ORDER BY s DESC LIMIT u.lim) l),
             p_now + u.per * interval '1 millisecond'
        FROM used u ORDER BY u.key
      ON CONFLICT (key) DO UPDATE SET starts = excluded.starts, expires_at = greatest(r.expires_at, excluded.expires_at)
      RETURNING r.key, r.starts
    )
    SELECT min({{schema}}.flow_rate_next(coalesce(w.starts, r.starts, '{}'), (b.value ->> 0)::int, (b.value ->> 1)::bigint, p_now)) INTO v_wake
      FROM jsonb_each(coalesce(v_blocked, '{}')) b LEFT JOIN written w ON w.key = b.key LEFT JOIN {{schema}}.flow_rates r ON r.key = b.key;
  END IF;
  IF v_wake <= p_now THEN v_wake := NULL; END IF;
  IF v_wids IS NULL AND v_parked > 0 AND v_seen >= v_budget THEN v_wake := p_now; END IF;
  IF v_wake IS NOT NULL THEN
    wid := NULL; tname := NULL; ord := NULL; wake := v_wake; bad := NULL; waited := NULL;
    RETURN NEXT;
  END IF;
END $$;
