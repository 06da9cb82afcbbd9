import { markSecrets, missingKeysIn, secretsIn } from '../db/sealing.js';
import type { Queryable } from '../db/types.js';
import type { SignalRow, WaitEvidence } from '../wire/index.js';
import { forgetClaimsSql, recordClaimSql } from './claims.js';
import { placeWaiting } from './flow.js';
import { workflowPausedSql } from './pauses.js';
import { rangedClaimSql, rangedPickSql, rangesJsonSql } from './range-claims.js';
import { signalJsonSql, signalsOfJson } from './signals.js';
import type { DeferredRow } from './task-columns.js';
import type { TaskRecord } from './workflows.js';

/** A claimed attempt: only the task's columns a handler run needs (each claims many), with its deps' outputs. */
export type FetchedTask = Pick<
  TaskRecord,
  'workflow_id' | 'name' | 'template' | 'kind' | 'queue' | 'attempt' | 'max_attempts' | 'args' | 'deps' | 'dependents' | 'timeout_ms' | 'start'
> & {
  /** Args and metadata strings to render before the handler runs (their templates read deps). */
  deferred: DeferredRow | null;
  /** Some dependent has a wait that this task's completion may activate. */
  dependents_wait: boolean;
  /** Direct deps' outputs by name, read in the same statement that claimed the task (large ones aside). */
  dep_outputs: Record<string, unknown> | null;
  /** Direct deps whose outputs are large (output_bytes): not in the claim, read by the worker before the handler runs. */
  large_deps?: string[];
  /** The data keys its row holds values of that this worker was not given: it is given back, not run. */
  missing_keys?: string[];
  /** What satisfied the task's wait, stored when it resolved (null without a wait): the handler's ctx.wait. */
  wait_evidence: WaitEvidence | null;
  /** Where the claimed row version lives ("(page,item)"): its completion finds it there unless it moved since. */
  tid: string;
  /** Its stored flow control cannot be enforced (an older braid stored it out of range): what it is; the attempt ends the task. */
  flow_error: string | null;
  /** The signals its wait evidence names, read by the claim (null without a wait): the handler's ctx.wait shows them. */
  wait_signals?: SignalRow[] | null;
};

/** A claimed task's fields, in the order of its JSON array: claimedJson() writes them, decodeClaimed() reads them. */
const CLAIMED = [
  'workflow_id',
  'name',
  'template',
  'kind',
  'queue',
  'attempt',
  'max_attempts',
  'args',
  'deps',
  'dependents',
  'dependents_wait',
  'timeout_ms',
  'start',
  'tid',
  'dep_outputs',
  'deferred',
  'wait_evidence',
  'flow_error',
  'wait_signals',
] as const satisfies readonly (keyof FetchedTask)[];

/** A claimed task as claimedJson() writes it. */
export type ClaimedJson = unknown[];

/**
 * A claimed task as one JSON array (no keys: a claim returns hundreds); `c` is the claimed row, `depOutputs`
 * the SQL of its deps' outputs. decodeClaimed() reads it back.
 */
export function claimedJson(s: string, c: string, depOutputs: string): string {
  const field = (f: (typeof CLAIMED)[number]) => (f === 'dep_outputs' ? depOutputs : f === 'wait_signals' ? waitSignalsSql(s, c) : `${c}.${f}`);
  return `json_build_array(${CLAIMED.map(field).join(', ')})`;
}

/**
 * The signals a claimed task's wait evidence names (its signal terms' signal_ids), by key, in id order; null
 * without evidence. Read in the claim: a handler whose wait a signal resolved starts one round trip sooner.
 */
function waitSignalsSql(s: string, c: string): string {
  return `CASE WHEN ${c}.wait_evidence IS NOT NULL THEN coalesce((
             SELECT json_agg(${signalJsonSql('g')} ORDER BY g.id)
               FROM ${s}.signals g
              WHERE g.workflow_id = ${c}.workflow_id
                AND g.id = ANY(ARRAY(SELECT DISTINCT i::bigint FROM jsonb_array_elements(${c}.wait_evidence->'terms') AS e
                                      CROSS JOIN LATERAL jsonb_array_elements_text(coalesce(e->'signal_ids', '[]')) AS i
                                     WHERE e->>'kind' = 'signal'))), '[]') END`;
}

/**
 * A claimed task's direct deps' outputs by name, and the names of those whose outputs are large (read apart):
 * one key lookup per dep (a lateral subquery, so no plan can read all of the workflow's tasks instead, as a
 * generic plan made on stale statistics did). decodeClaimed() splits the pair.
 */
export function depOutputsSql(s: string, c: string): string {
  return `(SELECT jsonb_build_array(jsonb_object_agg(d.name, d.output) FILTER (WHERE d.output_bytes IS NULL),
                                    jsonb_agg(d.name) FILTER (WHERE d.output_bytes IS NOT NULL))
             FROM unnest(${c}.deps) AS dep
            CROSS JOIN LATERAL (SELECT t.name, t.output, t.output_bytes FROM ${s}.tasks t
                                 WHERE t.workflow_id = ${c}.workflow_id AND t.name = dep LIMIT 1) d)`;
}

const DEP_OUTPUTS = CLAIMED.indexOf('dep_outputs');

export function decodeClaimed(rows: ClaimedJson[] | null): FetchedTask[] {
  if (rows === null) return [];
  // a plain loop: a claim decodes hundreds of rows, and an entries array per row costs more than the rest
  const tasks: FetchedTask[] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    const task: Record<string, unknown> = {};
    for (let i = 0; i < CLAIMED.length; i++) task[CLAIMED[i]] = row[i];
    const pair = row[DEP_OUTPUTS] as [Record<string, unknown> | null, string[] | null] | null;
    task.dep_outputs = pair ? (pair[0] ?? {}) : null;
    if (pair?.[1]) task.large_deps = pair[1];
    if (task.wait_signals) task.wait_signals = signalsOfJson(task.wait_signals as Parameters<typeof signalsOfJson>[0]);
    // the sensitive values opened in the row (its args', its deps' outputs'): the privacy room reads them off the task
    const opened = secretsIn(row);
    if (opened) markSecrets(task, opened);
    const missing = missingKeysIn(row);
    if (missing) task.missing_keys = [...missing].sort();
    tasks[r] = task as FetchedTask;
  }
  return tasks;
}

/** A claim's running range as rangesJsonSql writes it: workflow, template, lo, hi, kind, queue, attempt, max_attempts, timeout_ms, args. */
type RangeJson = [string, string, number, number, string, string, number, number, number | null, unknown[]];

/** The items of a claim's running ranges, each as the claimed task a row of it would be (decodeClaimed's). */
export function decodeRanges(ranges: RangeJson[] | null, into: FetchedTask[]): FetchedTask[] {
  if (ranges === null) return into;
  for (const range of ranges) {
    const [workflow_id, template, lo, hi, kind, queue, attempt, max_attempts, timeout_ms, args] = range;
    // the privacy room's marks hold for every item of the range (a ranged item holds no sealed value: belt and braces)
    const opened = secretsIn(range);
    const missing = missingKeysIn(range);
    const missingKeys = missing && [...missing].sort();
    for (let i = lo; i < hi; i++) {
      const task: FetchedTask = {
        workflow_id,
        name: `${template}[${i}]`,
        template,
        kind,
        queue,
        attempt,
        max_attempts,
        args: args[i - lo],
        deps: [],
        dependents: [],
        dependents_wait: false,
        timeout_ms,
        start: null,
        tid: `r${lo}:${i}`,
        dep_outputs: null,
        deferred: null,
        wait_evidence: null,
        flow_error: null,
        wait_signals: null,
      };
      if (opened) markSecrets(task, opened);
      if (missingKeys) task.missing_keys = [...missingKeys];
      into.push(task);
    }
  }
  return into;
}

/** A fetch's claimed attempts, and the claim that records them (null when it claimed nothing). */
export interface Fetched {
  tasks: FetchedTask[];
  claim: string | null;
  /** When a rate-limited task of the queue may start next (a token frees), when one waits for it. */
  wakeAt: Date | null;
  /** Tasks with flow control wait in the queue without a place in its fair order yet: placeWaiting() gives them one. */
  unplaced: boolean;
  /** Where this claim stopped in the queue's order (pass it as the next claim's `after`); null when it claimed nothing there. */
  after: string | null;
}

const CLAIMED_RETURNING = `t.workflow_id, t.name, t.template, t.kind, t.queue, t.attempt, t.max_attempts, t.args, t.deps,
                  t.dependents, t.dependents_wait, t.timeout_ms, t.start, t.deferred, t.wait_evidence, t.ctid::text AS tid`;

/**
 * A one-row relation of what pauses leave a claim (braid pause): `kinds`, those of `kinds` (a text[]) whose kind is
 * not paused, and `queue_open`, whether `queue` is not paused. Read once per statement (pauses are few), so a
 * paused queue costs a claim no look at its tasks.
 */
export function openSql(s: string, queue: string, kinds: string): string {
  return `SELECT ARRAY(SELECT k FROM unnest(${kinds}) k WHERE NOT EXISTS (SELECT 1 FROM ${s}.pauses p WHERE p.scope = 'kind' AND p.target = k)) AS kinds,
              NOT EXISTS (SELECT 1 FROM ${s}.pauses p WHERE p.scope = 'queue' AND p.target = ${queue}) AS queue_open`;
}

/** What a compact claim records: its rows' names and its ranged items' (not among every_claimed's rows). */
const EVERY_CLAIMED_NAME = '(SELECT workflow_id, name FROM every_claimed UNION ALL SELECT workflow_id, name FROM claimed_ranged) n';

/**
 * The claim (fetchTasks): $1 queue, $2 kinds, $3 limit, $4 worker, $5 now, $6 claims to forget, $7 the limit
 * for tasks with flow control, $8 the ids of the data keys the worker was given (null: no look at keys, as a
 * worker that opens no sealed value claims), $9 where the worker's last claim of the queue stopped (the `after`
 * it returned; null: from the start). A task that needs a key the worker lacks (needs_keys) is passed over.
 *
 * The index scan starts after $9: the entries of the tasks claimed before stay in tasks_fetch until vacuum (and
 * each costs a heap visit while an older snapshot is open), so a scan from the start would walk every claimed
 * task of the queue again, its cost growing with the queue. Only when the tasks after $9 run short does it go on
 * from the start (tasks that became available before that point); the worker also starts from the start once a
 * second (keeps the order's promise for a task of a higher priority or an earlier schedule in a busy queue).
 * `compact` (the TypeScript worker's claims): the items taken from ranges come back as their running ranges
 * (`ranges`, decodeRanges), not in `tasks`. Exported for the plan-regression test.
 */
export function fetchSql(s: string, compact = false): string {
  return `WITH open AS MATERIALIZED (
       ${openSql(s, '$1', '$2::text[]')}
     ), ahead AS MATERIALIZED (
       ${pickSql(s, '>', '$3')}
     ), behind AS MATERIALIZED (
       ${pickSql(s, '<=', 'greatest($3 - (SELECT count(*) FROM ahead), 0)')}
     ), ${rangedPickSql(s)}, claimed AS (
       UPDATE ${s}.tasks t SET state = 'running', attempt = t.attempt + 1, started_at = $5, worker_id = $4
        WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM chosen WHERE ctid IS NOT NULL))
        RETURNING ${CLAIMED_RETURNING}, NULL::text AS flow_error, 0 AS ord
     ), ${rangedClaimSql(s, compact)}, waiting AS MATERIALIZED (
       -- a scalar subquery ordered as the index is (an EXISTS would drop the order): no plan reads the table instead,
       -- as one did when its statistics said every row matched
       SELECT coalesce((SELECT true FROM ${s}.tasks WHERE lane = 'flow' AND flow_parked IS NULL AND queue = $1
                         ORDER BY queue, flow_tag, id LIMIT 1), false) AS present
     ), flowed AS MATERIALIZED (
       SELECT f.* FROM (SELECT least($7::int, $3::int - (SELECT count(*)::int FROM chosen)) AS n) r
        CROSS JOIN LATERAL ${s}.flow_pick($1, (SELECT kinds FROM open)::text[], r.n, $5::timestamptz, false) f
        WHERE r.n > 0 AND (SELECT present FROM waiting) AND (SELECT queue_open FROM open)
     ), claimed_flow AS (
       UPDATE ${s}.tasks t SET state = 'running', attempt = t.attempt + 1, started_at = $5, worker_id = $4, flow_waited = coalesce(f.waited, false)
         FROM flowed f
        -- one key lookup per pick (by address: a join could plan a scan of the queue's tasks)
        WHERE t.ctid = ANY(ARRAY(SELECT (SELECT x.ctid FROM ${s}.tasks x WHERE x.workflow_id = p.wid AND x.name = p.tname)
                                   FROM flowed p WHERE p.wid IS NOT NULL))
          AND t.workflow_id = f.wid AND t.name = f.tname AND t.lane = 'flow'
        RETURNING ${CLAIMED_RETURNING}, f.bad AS flow_error, f.ord
     ), every_claimed AS (
       SELECT * FROM claimed UNION ALL SELECT * FROM claimed_flow${compact ? '' : ' UNION ALL SELECT * FROM claimed_ranged'}
     ), recorded AS (
       ${recordClaimSql(s, compact ? EVERY_CLAIMED_NAME : 'every_claimed', '$4', '$5')}
     ), forgotten AS (
       ${forgetClaimsSql(s, '$6', '$4')}
     )
     SELECT (SELECT json_agg(${claimedJson(s, 'c', `CASE WHEN cardinality(c.deps) > 0 THEN ${depOutputsSql(s, 'c')} END`)} ORDER BY c.ord)
               FROM every_claimed c) AS tasks,
            (SELECT id::text FROM recorded) AS claim,
            (SELECT min(wake) FROM flowed WHERE wid IS NULL) AS wake_at,
            (SELECT present FROM waiting)
              AND coalesce((SELECT true FROM ${s}.tasks WHERE lane = 'flow' AND flow_parked IS NULL AND queue = $1 AND flow_tag IS NULL
                             ORDER BY queue, flow_tag, id LIMIT 1), false)
              AS unplaced,
            -- the last in the queue's order, then its JSON (building one per claimed row cost 2 µs a task)
            (SELECT jsonb_build_array(p.priority, p.scheduled_at, p.id)
               FROM (SELECT priority, scheduled_at, id FROM chosen WHERE ctid IS NOT NULL ORDER BY 1 DESC, 2 DESC, 3 DESC LIMIT 1) p) AS after,
            ${compact ? rangesJsonSql : 'NULL::json'} AS ranges`;
}

/**
 * The available tasks of the claim's queue on one side of where the last claim stopped (`op` '>' after it, '<='
 * up to it), in the queue's order, locked: the row comparison is the index scan's start (or end), so no entry
 * the other side is read.
 */
const AFTER = `coalesce(($9::jsonb->>0)::smallint, -32768), coalesce(($9::jsonb->>1)::timestamptz, '-infinity'), coalesce(($9::jsonb->>2)::bigint, -1)`;

function pickSql(s: string, op: '>' | '<=', limit: string): string {
  return `SELECT ctid, priority, scheduled_at, id FROM ${s}.tasks
        WHERE lane = 'available' AND queue = $1 AND kind = ANY((SELECT kinds FROM open)::text[]) AND (SELECT queue_open FROM open)
          AND (priority, scheduled_at, id) ${op} (${AFTER})
          AND NOT ${workflowPausedSql(s, `${s}.tasks`)}
          AND ($8::text[] IS NULL OR needs_keys IS NULL OR needs_keys <@ $8::text[])
        ORDER BY priority, scheduled_at, id
        LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
}

/**
 * Claims up to `limit` available tasks of a queue for one worker in one statement (the protocol's claim(), whose
 * body is fetchSql): the inner SELECT skips
 * rows other workers hold, so each task attempt runs once at a time. Tasks with flow control (lane 'flow')
 * are picked by flow_pick() (sql/flow-pick.sql) for the room the others left, up to `flowLimit` (no prefetch: a
 * flow-controlled task counts against its limits from its claim, so it is claimed only for a free slot); the
 * function is not called when the queue has none. The same statement records the claim and deletes the worker's claims listed in `forget`
 * (those whose attempts have all ended).
 */
export async function fetchTasks(
  q: Queryable,
  s: string,
  p: {
    queue: string;
    kinds: readonly string[];
    limit: number;
    flowLimit?: number;
    workerId: string;
    now: Date;
    forget?: readonly string[];
    /** The ids of the data keys the worker was given: tasks that need another are passed over. */
    keys?: readonly string[];
    /** Where the worker's last claim of the queue stopped (its `after`): the scan starts there. */
    after?: string | null;
  },
): Promise<Fetched> {
  // one JSON value for the whole batch: one parse, rather than a type parser per column of every row
  const { rows } = await q.query<{
    tasks: ClaimedJson[] | null;
    claim: string | null;
    wake_at: Date | null;
    unplaced: boolean | null;
    after: string | null;
    ranges: RangeJson[] | null;
  }>(
    `SELECT tasks, claim, wake_at, unplaced, after::text, ranges FROM ${s}.claim($1, $2, $3, $4, $5, $6, $7, $8, $9, true)`,
    [p.queue, p.kinds, p.limit, p.workerId, p.now, p.forget ?? [], p.flowLimit ?? 0, p.keys ?? null, p.after ?? null],
    // a row with a value of a data key this worker lacks is decoded still, marked: the executor gives it back
    { prepare: true, keepUnopened: true },
  );
  const r = rows[0];
  // tasks that began to wait since get their place in the fair order, in a statement of their own (the claim
  // updated the same rows); a failure leaves them for the next claim to place (this claim has its tasks already)
  if (r?.unplaced) await placeWaiting(q, s, p.queue).catch(() => undefined);
  return {
    tasks: decodeRanges(r?.ranges ?? null, decodeClaimed(r?.tasks ?? null)),
    claim: r?.claim ?? null,
    wakeAt: r?.wake_at ? new Date(r.wake_at) : null,
    unplaced: r?.unplaced === true,
    after: r?.after ?? null,
  };
}

/** Deps' large outputs (a claim names them rather than carry them), by name: the protocol's dep_outputs(). */
export async function largeOutputs(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<Record<string, unknown>> {
  const { rows } = await q.query<{ outputs: Record<string, unknown> }>(`SELECT ${s}.dep_outputs($1, $2) AS outputs`, [workflowId, names]);
  const outputs: Record<string, unknown> = {};
  for (const name of names) outputs[name] = rows[0]?.outputs[name] ?? null;
  const opened = secretsIn(rows[0]?.outputs);
  if (opened) markSecrets(outputs, opened);
  return outputs;
}
