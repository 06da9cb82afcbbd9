import type { PlanWait } from '../../compiler/plan.js';
import type { TaskResult } from '../core/scopes.js';
import type { Queryable } from '../db/types.js';
import type { SignalRow } from '../waits/decide.js';
import type { WaitEvidence, WaitProgressRecord } from '../waits/records.js';
import { channels } from './channels.js';

/** A task whose wait is active (deps satisfied, not yet resolved). */
export interface WaitingTask {
  name: string;
  template: string;
  deps: string[];
  wait: PlanWait;
  wait_started_at: Date;
  wait_progress: WaitProgressRecord | null;
  scheduled_at: Date;
  queue: string;
}

export interface WaitWorkflow {
  id: string;
  name: string;
  definition_hash: string;
  state: string;
  attempt: number;
  inputs: unknown;
  created_at: Date;
  attempt_started_at: Date;
}

/** A dep as generic terms read it (and as timer anchors need it). */
export interface DepRow extends TaskResult {
  finalized_at: Date | null;
}

const SIGNAL_COLUMNS = 'id::text AS id, attempt, key, payload, source, idempotency_key, created_at';

/**
 * The workflow row evaluation reads; `lock` also takes the row lock (the caller's transaction serialises on it),
 * and gives the items of its ranges rows as lock_workflows() does (migration 046), in a statement after the lock's
 * when it has ranges: the lock's statement read them from a snapshot taken before any wait for the lock.
 */
export async function loadWaitWorkflow(q: Queryable, s: string, id: string, options: { lock?: boolean } = {}): Promise<WaitWorkflow | undefined> {
  const { rows } = await q.query<WaitWorkflow & { ranged?: boolean }>(
    `SELECT id, name, definition_hash, state, attempt, inputs, created_at, attempt_started_at${
      options.lock ? `, EXISTS (SELECT 1 FROM ${s}.task_ranges r WHERE r.workflow_id = $1) AS ranged` : ''
    }
      FROM ${s}.workflows WHERE id = $1${options.lock ? ' FOR UPDATE' : ''}`,
    [id],
    { prepare: true },
  );
  const row = rows[0];
  if (!row || !options.lock) return row;
  const { ranged, ...workflow } = row;
  if (ranged) await q.query(`SELECT ${s}.unrange(ARRAY[$1::text])`, [id]);
  return workflow;
}

/** Marks waits active: their deps are satisfied as of now (a wait already active keeps its start). */
export async function markWaitsStarted(q: Queryable, s: string, workflowId: string, names: readonly string[], now: Date): Promise<void> {
  await markWaitsStartedMany(q, s, [workflowId], names, now);
}

/** markWaitsStarted for the same task names of many workflows (a batch start's root waits). */
export async function markWaitsStartedMany(q: Queryable, s: string, ids: readonly string[], names: readonly string[], now: Date): Promise<void> {
  await q.query(
    `UPDATE ${s}.tasks SET wait_started_at = $3
      WHERE workflow_id = ANY($1::text[]) AND name = ANY($2::text[]) AND state = 'pending' AND wait IS NOT NULL AND deps_left = 0 AND wait_started_at IS NULL`,
    [ids, names, now],
  );
}

/**
 * The waiting tasks of workflow `workflow` that `names` (a text[], null: any) and `key` (null: any) select, in
 * their order, as loadWaitingTasks reads them; a signal's insert reads them in its own statement (sql/signals.ts).
 */
export function waitingTasksSql(s: string, workflow: string, names: string, key: string): string {
  return `SELECT name, template, deps, wait, wait_started_at, wait_progress, scheduled_at, queue FROM ${s}.tasks
      WHERE workflow_id = ${workflow} AND lane = 'pending' AND wait_started_at IS NOT NULL
        AND (${names}::text[] IS NULL OR name = ANY(${names}::text[])) AND (${key}::text IS NULL OR ${key}::text = ANY(wait_keys))
      ORDER BY id`;
}

/** Waiting tasks read as JSON (json_agg of waitingTasksSql's rows): their times as dates. */
export function waitingTasksOfJson(
  rows: (Omit<WaitingTask, 'wait_started_at' | 'scheduled_at'> & { wait_started_at: string; scheduled_at: string })[] | null,
): WaitingTask[] {
  return (rows ?? []).map((r) => ({ ...r, wait_started_at: new Date(r.wait_started_at), scheduled_at: new Date(r.scheduled_at) }));
}

/** Active waits of one workflow: by name, or those that declare a signal key. */
export async function loadWaitingTasks(
  q: Queryable,
  s: string,
  workflowId: string,
  filter: { names?: readonly string[]; key?: string },
): Promise<WaitingTask[]> {
  const { rows } = await q.query<WaitingTask>(waitingTasksSql(s, '$1', '$2', '$3'), [workflowId, filter.names ?? null, filter.key ?? null], {
    prepare: true,
  });
  return rows;
}

export async function loadDepRows(q: Queryable, s: string, workflowId: string, names: readonly string[]): Promise<DepRow[]> {
  if (names.length === 0) return [];
  const { rows } = await q.query<DepRow>(
    `SELECT name, template, idx, key, state, output, finalized_at FROM ${s}.task_view WHERE workflow_id = $1 AND name = ANY($2::text[]) ORDER BY id`,
    [workflowId, names],
  );
  return rows;
}

/** Signals of some keys in one attempt after an id, ascending, at most `limit` rows. */
export async function signalsAfter(
  q: Queryable,
  s: string,
  p: { workflowId: string; keys: readonly string[]; attempt: number; afterId: string; limit: number; upToId?: string | null },
): Promise<SignalRow[]> {
  const { rows } = await q.query<SignalRow>(
    `SELECT ${SIGNAL_COLUMNS} FROM ${s}.signals
      WHERE workflow_id = $1 AND key = ANY($2::text[]) AND attempt = $3 AND id > $4::bigint AND ($6::bigint IS NULL OR id <= $6::bigint)
      ORDER BY signals.id LIMIT $5`,
    [p.workflowId, p.keys, p.attempt, p.afterId, p.limit, p.upToId ?? null],
    { prepare: true },
  );
  return rows;
}

export interface TimerRow {
  task: string;
  name: string;
  fire_at: Date;
  fired_at: Date | null;
}

export async function insertTimers(
  q: Queryable,
  s: string,
  workflowId: string,
  attempt: number,
  timers: { task: string; name: string; fire_at: Date }[],
): Promise<void> {
  await insertTimersMany(
    q,
    s,
    timers.map((t) => ({ ...t, workflow_id: workflowId, attempt })),
  );
}

/** Timers of many workflows' waits, each of its workflow's attempt (an existing one is kept). */
export async function insertTimersMany(
  q: Queryable,
  s: string,
  timers: readonly { workflow_id: string; attempt: number; task: string; name: string; fire_at: Date }[],
): Promise<void> {
  if (timers.length === 0) return;
  await q.query(
    `INSERT INTO ${s}.timers (workflow_id, task, name, attempt, fire_at)
     SELECT x.workflow_id, x.task, x.name, x.attempt, x.fire_at
       FROM jsonb_to_recordset($1::jsonb) AS x(workflow_id text, task text, name text, attempt int, fire_at timestamptz)
     ON CONFLICT (workflow_id, task, name) DO NOTHING`,
    [JSON.stringify(timers)],
  );
}

/** Wakes the leader's timer loop to the earliest new fire time. */
export async function notifyTimer(q: Queryable, schema: string, fireAt: Date): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [channels(schema).timer, String(fireAt.getTime())]);
}

/** A task's wait, where diagnostics read it. */
export async function waitTask(q: Queryable, s: string, workflowId: string, task: string): Promise<WaitTaskRow | undefined> {
  const { rows } = await q.query<WaitTaskRow>(
    `SELECT name, template, deps, state, wait, wait_started_at, wait_evidence FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2`,
    [workflowId, task],
  );
  return rows[0];
}

export interface WaitTaskRow {
  name: string;
  template: string;
  deps: string[];
  state: string;
  wait: PlanWait | null;
  wait_started_at: Date | null;
  wait_evidence: WaitEvidence | null;
}

/** A task's wait progress (what its workflows terms resolved to). */
export async function waitProgress(q: Queryable, s: string, workflowId: string, task: string): Promise<WaitProgressRecord | null> {
  const { rows } = await q.query<{ wait_progress: WaitProgressRecord | null }>(`SELECT wait_progress FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2`, [
    workflowId,
    task,
  ]);
  return rows[0]?.wait_progress ?? null;
}

export async function loadTimers(q: Queryable, s: string, workflowId: string, tasks: readonly string[]): Promise<TimerRow[]> {
  const { rows } = await q.query<TimerRow>(`SELECT task, name, fire_at, fired_at FROM ${s}.timers WHERE workflow_id = $1 AND task = ANY($2::text[])`, [
    workflowId,
    tasks,
  ]);
  return rows;
}

export interface WaitUpdate {
  name: string;
  progress: WaitProgressRecord;
  /** Set when the wait resolved: the task's next state and the evidence. */
  state?: 'available' | 'scheduled';
  evidence?: unknown;
}

/**
 * Stores each evaluation, for the tasks of any number of workflows in one statement; tasks that resolved move on
 * (the tasks trigger wakes their queues' workers on commit).
 */
export async function applyWaitUpdatesMany(
  q: Queryable,
  ctx: { s: string; schema: string },
  updates: readonly (WaitUpdate & { workflow_id: string })[],
): Promise<void> {
  if (updates.length === 0) return;
  await q.query(
    `UPDATE ${ctx.s}.tasks t SET wait_progress = u.progress, wait_evidence = coalesce(u.evidence, t.wait_evidence), state = coalesce(u.state, t.state)
       FROM jsonb_to_recordset($1::jsonb) AS u(workflow_id text, name text, progress jsonb, state text, evidence jsonb)
      WHERE t.workflow_id = u.workflow_id AND t.name = u.name AND t.state = 'pending'`,
    [
      JSON.stringify(
        updates.map((u) => ({ workflow_id: u.workflow_id, name: u.name, progress: u.progress, state: u.state ?? null, evidence: u.evidence ?? null })),
      ),
    ],
    { prepare: true },
  );
}

/** Workflows with timers due, oldest first (the leader fires them in batches of workflows). */
export async function workflowsWithDueTimers(q: Queryable, s: string, now: Date, limit = 500): Promise<string[]> {
  const { rows } = await q.query<{ workflow_id: string }>(
    `SELECT workflow_id FROM (SELECT workflow_id, fire_at FROM ${s}.timers WHERE fired_at IS NULL AND fire_at <= $1 ORDER BY fire_at LIMIT $2) d
      GROUP BY workflow_id ORDER BY min(fire_at)`,
    [now, limit],
  );
  return rows.map((r) => r.workflow_id);
}

/** The earliest timer not fired yet (the leader sleeps until then, or its poll interval). */
export async function nextTimer(q: Queryable, s: string): Promise<Date | null> {
  const { rows } = await q.query<{ at: Date | null }>(`SELECT min(fire_at) AS at FROM ${s}.timers WHERE fired_at IS NULL`);
  return rows[0].at;
}

/** Waits that a crash left activated but never evaluated. */
export async function unevaluatedWaits(q: Queryable, s: string, limit = 100): Promise<{ workflow_id: string; name: string }[]> {
  const { rows } = await q.query<{ workflow_id: string; name: string }>(
    `SELECT workflow_id, name FROM ${s}.tasks WHERE lane = 'pending' AND wait_started_at IS NOT NULL AND wait_progress IS NULL LIMIT $1`,
    [limit],
  );
  return rows;
}

/**
 * Registers waits on other workflows: records who waits on whom, and marks the awaited rows (taking their
 * row locks, in id order, so this and their finalization serialise). An awaited workflow not inserted yet (a
 * child whose start is still pending) is covered by its id's advisory lock, which the insert takes too.
 */
export async function registerWaiters(q: Queryable, s: string, workflowId: string, waits: readonly { task: string; id: string }[]): Promise<void> {
  const ids = [...new Set(waits.map((w) => w.id))].sort();
  await q.query(`SELECT pg_advisory_xact_lock(${awaitLockKey('id')}) FROM unnest($1::text[]) AS id ORDER BY id`, [ids]);
  await q.query(
    `INSERT INTO ${s}.workflow_waiters (awaited_id, workflow_id, task)
     SELECT x.id, $1, x.task FROM jsonb_to_recordset($2::jsonb) AS x(task text, id text) ON CONFLICT DO NOTHING`,
    [workflowId, JSON.stringify(waits)],
  );
  await q.query(
    `UPDATE ${s}.workflows SET has_waiters = true
      WHERE id IN (SELECT id FROM ${s}.workflows WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE) AND NOT has_waiters`,
    [ids],
  );
}

/** The advisory lock that serialises registering a wait on a workflow id with inserting that workflow. */
export function awaitLockKey(idExpression: string): string {
  return `hashtextextended('braid-await:' || ${idExpression}, 0)`;
}

export async function forgetWaiters(q: Queryable, s: string, workflowId: string, tasks: readonly string[]): Promise<void> {
  await q.query(`DELETE FROM ${s}.workflow_waiters WHERE workflow_id = $1 AND task = ANY($2::text[])`, [workflowId, tasks]);
}

/** The awaited workflows' states, and outputs of those that completed. */
export async function loadAwaited(q: Queryable, s: string, ids: readonly string[]): Promise<Map<string, { id: string; state: string; output: unknown }>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<{ id: string; state: string; output: unknown }>(
    `SELECT id, state, CASE WHEN state = 'completed' THEN output END AS output FROM ${s}.workflows WHERE id = ANY($1::text[])`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/** A batch's workflows (a timer storm): the same rows as loadWaitWorkflow, for many workflows at once. */
export async function loadWaitWorkflows(q: Queryable, s: string, ids: readonly string[]): Promise<WaitWorkflow[]> {
  const { rows } = await q.query<WaitWorkflow>(
    `SELECT id, name, definition_hash, state, attempt, inputs, created_at, attempt_started_at FROM ${s}.workflows WHERE id = ANY($1::text[])`,
    [ids],
  );
  return rows;
}

/** Active waits of many workflows, by workflow and task name. */
export async function loadWaitingTasksMany(
  q: Queryable,
  s: string,
  targets: readonly { workflow_id: string; name: string }[],
): Promise<(WaitingTask & { workflow_id: string })[]> {
  const { rows } = await q.query<WaitingTask & { workflow_id: string }>(
    `SELECT t.workflow_id, t.name, t.template, t.deps, t.wait, t.wait_started_at, t.wait_progress, t.scheduled_at, t.queue
       FROM jsonb_to_recordset($1::jsonb) AS x(workflow_id text, name text)
       JOIN ${s}.tasks t ON t.workflow_id = x.workflow_id AND t.name = x.name
      WHERE t.lane = 'pending' AND t.wait_started_at IS NOT NULL
      ORDER BY t.workflow_id, t.id`,
    [JSON.stringify(targets)],
  );
  return rows;
}

/** The timers of many workflows. */
export async function loadTimersMany(q: Queryable, s: string, ids: readonly string[]): Promise<(TimerRow & { workflow_id: string })[]> {
  const { rows } = await q.query<TimerRow & { workflow_id: string }>(
    `SELECT workflow_id, task, name, fire_at, fired_at FROM ${s}.timers WHERE workflow_id = ANY($1::text[])`,
    [ids],
  );
  return rows;
}

/** Each workflow's last signal id ('0' for none): the evidence boundary of a wait resolved now. */
export async function maxSignalIds(q: Queryable, s: string, ids: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await q.query<{ workflow_id: string; id: string }>(
    `SELECT workflow_id, max(id)::text AS id FROM ${s}.signals WHERE workflow_id = ANY($1::text[]) GROUP BY 1`,
    [ids],
  );
  return new Map(rows.map((r) => [r.workflow_id, r.id]));
}

/** Marks the due timers of many workflows fired; returns, per workflow, the tasks to evaluate. */
export async function fireTimersMany(q: Queryable, s: string, ids: readonly string[], now: Date): Promise<Map<string, string[]>> {
  const { rows } = await q.query<{ workflow_id: string; task: string }>(
    `UPDATE ${s}.timers SET fired_at = $2 WHERE workflow_id = ANY($1::text[]) AND fired_at IS NULL AND fire_at <= $2 RETURNING workflow_id, task`,
    [ids, now],
  );
  const out = new Map<string, string[]>();
  for (const r of rows) if (!out.get(r.workflow_id)?.includes(r.task)) out.set(r.workflow_id, [...(out.get(r.workflow_id) ?? []), r.task]);
  return out;
}
