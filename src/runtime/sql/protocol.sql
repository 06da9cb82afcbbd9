-- The worker protocol's functions written in SQL (docs/protocol.md); claim() and complete() are generated from
-- the statements of sql/fetch.ts and sql/complete.ts (sql/protocol.ts). Revision 1.

CREATE OR REPLACE FUNCTION {{schema}}.protocol() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;

-- A worker records itself and the kinds it runs; an id seen before is revived (a restart under the same id).
CREATE OR REPLACE FUNCTION {{schema}}.register_worker(p_id text, p_host text, p_pid int, p_queues text[], p_kinds text[], p_now timestamptz)
RETURNS void LANGUAGE sql VOLATILE AS $$
  INSERT INTO {{schema}}.workers (id, host, pid, queues, kinds, started_at, heartbeat_at) VALUES (p_id, p_host, p_pid, p_queues, p_kinds, p_now, p_now)
  ON CONFLICT (id) DO UPDATE SET queues = EXCLUDED.queues, kinds = EXCLUDED.kinds, heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = NULL
$$;

-- The worker is alive. p_abandoned lists attempts whose end it could not record ([{workflow_id, name, attempt}]):
-- the leader rescues them; the result is those still running for it (the others ended and need no listing).
-- False in `alive` when the worker was stopped or its record is gone: it must stop claiming.
CREATE OR REPLACE FUNCTION {{schema}}.heartbeat(p_id text, p_now timestamptz, p_abandoned jsonb DEFAULT NULL)
RETURNS TABLE (alive boolean, abandoned jsonb) LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_still jsonb;
BEGIN
  IF p_abandoned IS NOT NULL AND jsonb_array_length(p_abandoned) > 0 THEN
    -- an abandoned item of a running range gets its row first (the rescuer ends it by its row)
    IF EXISTS (SELECT 1 FROM {{schema}}.task_ranges r WHERE r.worker_id = p_id) THEN
      PERFORM 1 FROM {{schema}}.lock_workflows(ARRAY(SELECT DISTINCT a.workflow_id FROM jsonb_to_recordset(p_abandoned) AS a(workflow_id text)));
    END IF;
    SELECT jsonb_agg(jsonb_build_object('workflow_id', a.workflow_id, 'name', a.name, 'attempt', a.attempt)) INTO v_still
      FROM jsonb_to_recordset(p_abandoned) AS a(workflow_id text, name text, attempt int)
     WHERE EXISTS (SELECT 1 FROM {{schema}}.tasks t WHERE t.workflow_id = a.workflow_id AND t.name = a.name AND t.worker_id = p_id AND t.attempt = a.attempt);
  END IF;
  RETURN QUERY UPDATE {{schema}}.workers w SET heartbeat_at = p_now, abandoned = v_still
                WHERE w.id = p_id AND w.stopped_at IS NULL RETURNING true, w.abandoned;
  IF NOT FOUND THEN
    RETURN QUERY SELECT false, NULL::jsonb;
  END IF;
END
$fn$;

-- The worker stops: the leader rescues at once whatever it still holds.
CREATE OR REPLACE FUNCTION {{schema}}.stop_worker(p_id text, p_now timestamptz)
RETURNS void LANGUAGE sql VOLATILE AS $$
  UPDATE {{schema}}.workers SET stopped_at = p_now, heartbeat_at = p_now WHERE id = p_id
$$;

-- Lines of tasks' logs, stored in the order given (ids follow it; `at` defaults to now()):
-- [{workflow_id, task, attempt, at, level, source, message, fields}].
-- A line of an item that has no row of its own yet (a ranged for_each item, migration 046) fails the lines' foreign
-- key: the lines' workflows are then locked through lock_workflows(), which gives their items rows, and the lines
-- go in again (the first try costs nothing more when every task has its row).
CREATE OR REPLACE FUNCTION {{schema}}.log(p_lines jsonb)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  BEGIN
    PERFORM {{schema}}.insert_log_lines(p_lines);
  EXCEPTION WHEN foreign_key_violation THEN
    PERFORM 1 FROM {{schema}}.lock_workflows(ARRAY(SELECT DISTINCT l.workflow_id FROM jsonb_to_recordset(p_lines) AS l(workflow_id text)));
    PERFORM {{schema}}.insert_log_lines(p_lines);
  END;
END
$fn$;

CREATE OR REPLACE FUNCTION {{schema}}.insert_log_lines(p_lines jsonb)
RETURNS void LANGUAGE sql VOLATILE AS $$
  INSERT INTO {{schema}}.task_logs (workflow_id, task, attempt, at, level, source, message, fields)
  SELECT l.workflow_id, l.task, l.attempt, coalesce(l.at, now()), l.level, l.source, l.message, l.fields
    FROM ROWS FROM (jsonb_to_recordset(p_lines)
                    AS (workflow_id text, task text, attempt int, at timestamptz, level text, source text, message text, fields jsonb))
         WITH ORDINALITY AS l(workflow_id, task, attempt, at, level, source, message, fields, n)
   ORDER BY l.n
$$;

-- Outputs of tasks of a workflow by name (a claim names deps whose outputs are large rather than carry them).
CREATE OR REPLACE FUNCTION {{schema}}.dep_outputs(p_workflow text, p_names text[])
RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT coalesce(jsonb_object_agg(t.name, t.output), '{}'::jsonb)
    FROM unnest(p_names) AS n(name)
    CROSS JOIN LATERAL (SELECT t.name, t.output FROM {{schema}}.tasks t WHERE t.workflow_id = p_workflow AND t.name = n.name LIMIT 1) t
$$;

-- The jitter of one attempt's backoff in [0, 1): FNV-1a over "workflow NUL task NUL attempt" (engine/decide.ts
-- attemptJitter), so the same attempt always waits the same.
CREATE OR REPLACE FUNCTION {{schema}}.attempt_jitter(p_workflow text, p_task text, p_attempt int)
RETURNS double precision LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  h bigint := 2166136261;
  units int[] := ARRAY[]::int[];
  c int;
  part text;
  i int;
  k int := 0;
BEGIN
  FOREACH part IN ARRAY ARRAY[p_workflow, p_task, p_attempt::text] LOOP
    IF k > 0 THEN units := units || 0; END IF;
    k := k + 1;
    FOR i IN 1 .. length(part) LOOP
      c := ascii(substr(part, i, 1));
      -- as attemptJitter reads a code point past the BMP (charCodeAt(0)): its high surrogate
      IF c > 65535 THEN
        units := units || (55296 + ((c - 65536) >> 10));
      ELSE
        units := units || c;
      END IF;
    END LOOP;
  END LOOP;
  FOREACH c IN ARRAY units LOOP
    h := ((h # c) * 16777619) & 4294967295;
  END LOOP;
  RETURN h / 4294967296.0;
END
$fn$;

-- An ISO-8601 UTC timestamp as JavaScript writes one (toISOString): what task histories and logs store.
CREATE OR REPLACE FUNCTION {{schema}}.iso_time(p_at timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

ALTER TABLE {{schema}}.effects DROP CONSTRAINT effects_kind_check;
ALTER TABLE {{schema}}.effects ADD CONSTRAINT effects_kind_check CHECK (kind IN ('start', 'cancel', 'finalized', 'evaluate', 'hook', 'advance', 'render'));

-- Why a failure is not retried whatever attempts are left (engine/decide.ts notRetried); NULL when it may be.
CREATE OR REPLACE FUNCTION {{schema}}.not_retried(p_error jsonb, p_retry jsonb)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  v_code text := p_error->>'code';
BEGIN
  IF coalesce((p_error->>'no_retry')::boolean, false) THEN RETURN 'the handler said no retry can mend it'; END IF;
  IF v_code IS NULL THEN RETURN NULL; END IF;
  IF v_code = 'output_too_large' THEN RETURN v_code || ' is never retried: it would fail the same way'; END IF;
  IF p_retry IS NULL OR NOT (p_retry ? 'non_retryable') THEN
    RETURN CASE WHEN v_code = 'output_invalid' THEN v_code || ' is not retried by default (retry: { non_retryable: [] } retries it)' END;
  END IF;
  RETURN CASE WHEN p_retry->'non_retryable' ? v_code THEN v_code || ' is in the task''s retry.non_retryable' END;
END
$fn$;

-- The backoff before attempt p_attempt runs again (engine/decide.ts retryDelayMs), in milliseconds.
CREATE OR REPLACE FUNCTION {{schema}}.retry_delay_ms(p_retry jsonb, p_attempt int, p_jitter double precision)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  v_policy jsonb := coalesce(p_retry, '{"backoff":"exponential","initial_ms":1000,"max_ms":3600000,"jitter":true}'::jsonb);
  v_n int := greatest(1, p_attempt);
  v_initial double precision := (v_policy->>'initial_ms')::double precision;
  v_base double precision;
  v_capped double precision;
BEGIN
  v_base := CASE v_policy->>'backoff'
              WHEN 'exponential' THEN v_initial * power(2, least(v_n - 1, 40))
              WHEN 'linear' THEN v_initial * v_n
              ELSE v_initial END;
  v_capped := least(v_base, (v_policy->>'max_ms')::double precision);
  -- rounded half up, as JavaScript's Math.round
  RETURN floor(CASE WHEN coalesce((v_policy->>'jitter')::boolean, false) THEN v_capped * (0.5 + p_jitter * 0.5) ELSE v_capped END + 0.5)::bigint;
END
$fn$;

-- Ends an attempt that did not complete (engine/end-attempt.ts calls it; docs/protocol.md): an error retries with
-- backoff until max_attempts, then discards; a cancel cancels for good; a snooze reschedules after p_snooze_ms
-- and a release makes the task available at once, neither using up the attempt; a render gives the attempt back
-- for braid's leader to render args that read deps (a worker without CEL asks so; a `render` effect); a
-- cancelled workflow's task ends cancelled instead. Under the workflow's lock, with braid's own line in the task's log. Returns the
-- task's state after it ('retryable', 'available', 'scheduled', 'discarded', 'cancelled'), or 'stale' when the
-- attempt no longer runs for this worker (timed out, cancelled, rescued: nothing changed). When the task ended
-- for good its dependents move on: with p_follow_up the caller does that in its transaction (braid's
-- TypeScript runtime evaluates what CEL decides); without it an `advance` effect does, in the leader's pass.
CREATE OR REPLACE FUNCTION {{schema}}.end_attempt(p_workflow text, p_task text, p_attempt int, p_worker text, p_outcome text, p_error jsonb,
                                                  p_snooze_ms bigint, p_now timestamptz, p_follow_up boolean DEFAULT false)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  t record;
  v_at timestamptz;
  v_state text;
  v_entry jsonb;
  v_error jsonb := coalesce(p_error, '{}'::jsonb);
  v_why text;
  v_level text;
  v_message text;
  v_started jsonb;
  v_retry_at timestamptz;
  v_code text;
BEGIN
  IF p_outcome IS NULL OR p_outcome NOT IN ('error', 'cancel', 'snooze', 'release', 'render') THEN
    RAISE EXCEPTION 'end_attempt: outcome % is not one of error, cancel, snooze, release, render', p_outcome USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_outcome IN ('error', 'release') AND jsonb_typeof(v_error->'message') IS DISTINCT FROM 'string' THEN
    RAISE EXCEPTION 'end_attempt: an % needs p_error with a string "message"', p_outcome USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_outcome = 'snooze' AND (p_snooze_ms IS NULL OR p_snooze_ms < 0) THEN
    RAISE EXCEPTION 'end_attempt: a snooze needs p_snooze_ms >= 0' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- the workflow's lock every writer takes: a ranged item (migration 046) gets its row first
  PERFORM 1 FROM {{schema}}.lock_workflows(ARRAY[p_workflow]);
  SELECT state, attempt, max_attempts, retry, cancel_requested, worker_id, started_at, deferred INTO t
    FROM {{schema}}.tasks WHERE workflow_id = p_workflow AND name = p_task FOR UPDATE;
  IF NOT FOUND OR t.state <> 'running' OR t.attempt <> p_attempt OR t.worker_id IS DISTINCT FROM p_worker THEN
    RETURN 'stale';
  END IF;
  v_started := CASE WHEN t.started_at IS NOT NULL THEN jsonb_build_object('started_at', {{schema}}.iso_time(t.started_at)) ELSE '{}'::jsonb END;

  IF p_outcome = 'render' AND NOT t.cancel_requested THEN
    IF t.deferred IS NULL THEN
      RAISE EXCEPTION 'end_attempt: task % has no args that read deps: nothing to render', p_task USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- braid's leader renders the args (an effect) and offers the task again with them; should no leader take the
    -- effect, the task is offered again in 10 minutes, for its worker to ask again
    UPDATE {{schema}}.tasks SET state = 'scheduled', attempt = attempt - 1, scheduled_at = p_now + interval '10 minutes', worker_id = NULL
     WHERE workflow_id = p_workflow AND name = p_task;
    INSERT INTO {{schema}}.effects (workflow_id, kind, payload, created_at) VALUES (p_workflow, 'render', jsonb_build_object('task', p_task), p_now);
    PERFORM pg_notify(n.nspname || '_effect', p_workflow)
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = '{{schema}}.effects'::regclass;
    PERFORM {{schema}}.log(jsonb_build_array(jsonb_build_object(
      'workflow_id', p_workflow, 'task', p_task, 'attempt', p_attempt, 'at', p_now, 'source', 'braid', 'level', 'info',
      'fields', jsonb_build_object('worker', p_worker),
      'message', 'its args read deps: braid renders them for the worker, then runs the task (the attempt is given back)')));
    RETURN 'scheduled';
  END IF;

  IF p_outcome IN ('snooze', 'release') AND NOT t.cancel_requested THEN
    v_at := p_now + make_interval(secs => CASE WHEN p_outcome = 'snooze' THEN p_snooze_ms / 1000.0 ELSE 0 END);
    v_state := CASE WHEN v_at > p_now THEN 'scheduled' ELSE 'available' END;
    UPDATE {{schema}}.tasks SET state = v_state, attempt = attempt - 1, scheduled_at = v_at, worker_id = NULL,
           errors = errors || CASE WHEN p_outcome = 'release'
                                   THEN jsonb_build_array(jsonb_build_object('attempt', p_attempt, 'at', {{schema}}.iso_time(p_now))
                                                          || v_error || v_started || jsonb_build_object('worker', p_worker))
                                   ELSE '[]'::jsonb END
     WHERE workflow_id = p_workflow AND name = p_task;
    PERFORM {{schema}}.log(jsonb_build_array(jsonb_build_object(
      'workflow_id', p_workflow, 'task', p_task, 'attempt', p_attempt, 'at', p_now, 'source', 'braid', 'fields', jsonb_build_object('worker', p_worker),
      'level', CASE WHEN p_outcome = 'snooze' THEN 'info' ELSE 'warn' END,
      'message', CASE WHEN p_outcome = 'snooze'
                      THEN format('snoozed for %s ms: runs again at %s (the attempt is given back)', p_snooze_ms, {{schema}}.iso_time(v_at))
                      ELSE format('released (%s): runs again at once (the attempt is given back)', v_error->>'message') END)));
    RETURN v_state;
  END IF;

  IF p_outcome <> 'error' THEN
    v_error := CASE WHEN v_error ? 'message' THEN v_error ELSE '{"kind":"cancel","message":"workflow cancelled"}'::jsonb END;
  END IF;
  v_entry := jsonb_build_object('attempt', p_attempt, 'at', {{schema}}.iso_time(p_now)) || (v_error - 'no_retry' - 'not_retried') || v_started
             || jsonb_build_object('worker', p_worker);
  IF p_outcome = 'cancel' OR t.cancel_requested THEN
    v_state := 'cancelled';
  ELSIF t.attempt >= t.max_attempts THEN
    v_state := 'discarded';
  ELSE
    v_why := {{schema}}.not_retried(v_error, t.retry);
    v_state := CASE WHEN v_why IS NULL THEN 'retryable' ELSE 'discarded' END;
  END IF;
  IF v_why IS NOT NULL THEN v_entry := v_entry || jsonb_build_object('not_retried', v_why); END IF;
  v_code := coalesce(v_error->>'code', v_error->>'kind', 'error');

  IF v_state = 'retryable' THEN
    -- a lost attempt (its worker died, or could not record the end) is no failure of the handler's to back off
    -- from: detecting it took long enough, so it runs again at once, keeping its place in the queue
    IF v_error->>'kind' = 'lost' THEN
      v_state := 'available';
      v_level := 'warn';
      v_message := format('attempt %s lost (%s): runs again at once', p_attempt, v_error->>'message');
    ELSE
      v_retry_at := p_now + make_interval(secs => {{schema}}.retry_delay_ms(t.retry, p_attempt, {{schema}}.attempt_jitter(p_workflow, p_task, p_attempt)) / 1000.0);
      v_level := 'error';
      v_message := format('attempt %s of %s failed (%s): %s; retry at %s', p_attempt, t.max_attempts, v_code, v_error->>'message',
                          {{schema}}.iso_time(v_retry_at));
    END IF;
    UPDATE {{schema}}.tasks SET state = v_state, scheduled_at = coalesce(v_retry_at, scheduled_at), worker_id = NULL, errors = errors || jsonb_build_array(v_entry)
     WHERE workflow_id = p_workflow AND name = p_task;
  ELSE
    UPDATE {{schema}}.tasks SET state = v_state, finalized_at = p_now, worker_id = NULL, errors = errors || jsonb_build_array(v_entry)
     WHERE workflow_id = p_workflow AND name = p_task;
    v_level := CASE WHEN v_state = 'cancelled' THEN 'warn' ELSE 'error' END;
    v_message := CASE WHEN v_state = 'cancelled' THEN format('cancelled: %s', v_error->>'message')
                      ELSE format('attempt %s of %s failed (%s): %s; the task is discarded%s', p_attempt, t.max_attempts, v_code, v_error->>'message',
                                  CASE WHEN v_why IS NOT NULL THEN format(' (not retried: %s)', v_why) ELSE '' END) END;
    IF NOT p_follow_up THEN
      INSERT INTO {{schema}}.effects (workflow_id, kind, payload, created_at)
      VALUES (p_workflow, 'advance', jsonb_build_object('ended', jsonb_build_array(jsonb_build_object('name', p_task, 'state', v_state))), p_now);
      PERFORM pg_notify(n.nspname || '_effect', p_workflow)
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = '{{schema}}.effects'::regclass;
    END IF;
  END IF;
  PERFORM {{schema}}.log(jsonb_build_array(jsonb_build_object(
    'workflow_id', p_workflow, 'task', p_task, 'attempt', p_attempt, 'at', p_now, 'source', 'braid', 'level', v_level, 'message', v_message,
    'fields', jsonb_build_object('worker', p_worker))));
  RETURN v_state;
END
$fn$;

-- What a task's definition says of its output, for a worker to check before it completes (docs/protocol.md):
-- `returns` (a JSON Schema, or null), `max_output` (bytes, or null: the worker's default), and `sensitive`,
-- whether the output has fields to seal (a worker that cannot seal must not complete it).
CREATE OR REPLACE FUNCTION {{schema}}.task_contract(p_workflow text, p_template text)
RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('returns', t->'returns', 'max_output', t->'max_output',
                            'sensitive', coalesce(jsonb_path_exists(t->'returns', 'strict $.**.sensitive ? (@ == true)'), false))
    FROM {{schema}}.workflows w
    JOIN {{schema}}.definitions d ON d.name = w.name AND d.hash = w.definition_hash
    CROSS JOIN LATERAL jsonb_array_elements(d.normalized->'tasks') t
   WHERE w.id = p_workflow AND t->>'name' = p_template
$$;

-- After a claim whose reply never came (the connection lost mid-call), the worker cannot know whether it
-- committed: it calls this with the claim ids it knows, and the attempts of its other claims still running for
-- it are given back, as never started (ended cancelled in a cancelled workflow). Returns how many.
CREATE OR REPLACE FUNCTION {{schema}}.release_unknown_claims(p_worker text, p_known bigint[], p_now timestamptz)
RETURNS int LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_lost jsonb;
  r record;
  n int := 0;
BEGIN
  -- the items of the worker's running ranges get rows first (released by their rows)
  PERFORM 1 FROM {{schema}}.lock_workflows(ARRAY(SELECT DISTINCT x.workflow_id FROM {{schema}}.task_ranges x WHERE x.worker_id = p_worker));
  WITH lost AS (
    DELETE FROM {{schema}}.claims WHERE worker_id = p_worker AND NOT (id = ANY(coalesce(p_known, '{}'::bigint[])))
    RETURNING workflow_ids, names
  )
  SELECT jsonb_agg(jsonb_build_object('w', k.w, 'n', k.n, 'a', t.attempt, 'c', t.cancel_requested) ORDER BY k.w, k.n) INTO v_lost
    FROM lost c CROSS JOIN LATERAL unnest(c.workflow_ids, c.names) AS k(w, n)
    JOIN {{schema}}.tasks t ON t.workflow_id = k.w AND t.name = k.n
   WHERE t.worker_id = p_worker;
  FOR r IN SELECT * FROM jsonb_to_recordset(coalesce(v_lost, '[]'::jsonb)) AS x(w text, n text, a int, c boolean) LOOP
    PERFORM {{schema}}.end_attempt(r.w, r.n, r.a, p_worker, CASE WHEN r.c THEN 'cancel' ELSE 'release' END,
                                   CASE WHEN r.c THEN NULL ELSE '{"message": "claimed by a call whose reply the worker never got", "kind": "lost"}'::jsonb END,
                                   NULL, p_now, false);
    n := n + 1;
  END LOOP;
  RETURN n;
END
$fn$;
