import type { Queryable } from '../db/types.js';
import { type StatementContext, WORKFLOW_ROW_COLUMNS, type WorkflowRow } from './advance.js';
import { activatedSql, moveDependentsSql } from './advance-wave.js';
import { recordClaimSql } from './claims.js';
import { type ClaimedJson, claimedJson, decodeClaimed, depOutputsSql, type FetchedTask } from './fetch.js';
import { pausedTaskSql } from './pauses.js';
import { rangedCompletionSql } from './range-completions.js';
import { finalWorkflowStateSql, heldSql } from './rules.js';

export interface Completion {
  workflowId: string;
  name: string;
  attempt: number;
  workerId: string;
  output: unknown;
  /** A large output's JSON text, sent as is (its value is then not parsed here: `output` is undefined). */
  outputText?: string;
  /** The tasks that depend on this one, when known: they bound the slots an eager claim reserves. */
  dependents?: readonly string[];
  /** Some dependent has a wait, which this completion may activate (the caller then evaluates it in the same transaction). */
  dependentsWait?: boolean;
  /** The claimed row version's address, when known: found there without an index lookup unless the row moved since. */
  tid?: string;
}

export interface CompletionResult {
  /** The attempts that took no effect: no longer running (or, in the first pass by address, moved). */
  skipped: Completion[];
  /** Workflows with no open task left whose output still has to be evaluated: pass to finalizePending. */
  toFinalize: string[];
  /** Dependents this completion made available and claimed at once for the completing worker. */
  claimed: FetchedTask[];
  /** The claim recording them (null when none were claimed). */
  claim: string | null;
  /** Dependents whose wait became active (deps satisfied): pass to activateWaits, per workflow. */
  activated: Map<string, string[]>;
}

/**
 * Eager claim: dependents that a completion makes available are claimed in the same statement for the
 * worker that completed their dep, up to its free slots per queue, so a chain hops without a NOTIFY and a
 * fetch in between. Others become available as usual.
 */
export interface EagerClaim {
  workerId: string;
  kinds: readonly string[];
  /** Free slots per queue. */
  slots: Record<string, number>;
}

/**
 * Completes a batch of task attempts in one statement, so each task's completion, its output and the
 * advancement of its dependents commit together (atomic even outside a transaction). The workflows are
 * locked first, in id order, so concurrent batches serialise per workflow and cannot deadlock.
 *
 * An attempt that is no longer running (timed out, rescued, cancelled, completed twice) is skipped: a late or
 * duplicate completion is a no-op. "Running" is tested as "has this worker" (a CHECK ties the two), which keeps
 * the planner on primary-key lookups. A completed dep satisfies every dependent whatever its ignore flags, so
 * dependents advance set-based; the state is readyStateSql(). A workflow whose last open task closes
 * finalizes in the same statement when it completes with no output template (finalWorkflowStateSql()); one
 * with an output template, or that fails or is cancelled, is returned in `toFinalize`, for finalizeWorkflows.
 *
 * Attempts whose claimed row version is known are found by it (the completion holds its workflow's lock, so
 * the lookup is on the critical path); those whose row moved since (updated by a cancel, an extension) are
 * completed in a second statement by key. The addresses are also given as one array: a TID scan of the array
 * is the plan the planner picks for certain, where a join on each address alone would lose to key lookups
 * in its cost model.
 */
export async function completeTasks(q: Queryable, ctx: StatementContext, items: readonly Completion[], claim?: EagerClaim): Promise<CompletionResult> {
  if (items.length === 0) return { skipped: [], toFinalize: [], claimed: [], claim: null, activated: new Map() };
  // a batch whose tasks have no dependents (as claimed) takes the lean statement, which leaves alone a task that
  // gained some since (an extension): the second pass, by key and whole, completes it
  const lean = items.every((i) => i.dependents !== undefined && i.dependents.length === 0);
  const byTid = items.every((i) => i.tid !== undefined);
  if (!byTid && !lean) return completeBatch(q, ctx, items, { byTid, lean }, claim);
  const first = await completeBatch(q, ctx, items, { byTid, lean }, claim);
  if (first.skipped.length === 0) return first;
  // the second pass claims nothing: a batch's claimed dependents are one claim
  const second = await completeBatch(q, ctx, first.skipped, { byTid: false, lean: false }, claim && { ...claim, slots: {} });
  const activated = new Map(first.activated);
  for (const [w, names] of second.activated) activated.set(w, [...(activated.get(w) ?? []), ...names]);
  return {
    skipped: second.skipped,
    toFinalize: [...new Set([...first.toFinalize, ...second.toFinalize])],
    claimed: first.claimed,
    claim: first.claim,
    activated,
  };
}

/**
 * The batch as compact JSON: attempts grouped by workflow and worker, each `[name, attempt, tid, output]`, so
 * a batch of hundreds repeats no ids or keys (fewer bytes to send and for the database to parse).
 */
function attemptsJson(items: readonly Completion[], byTid: boolean, apart: Completion | undefined): string {
  const groups = new Map<string, { head: string; attempts: string[] }>();
  for (const i of items) {
    const key = `${i.workflowId}\u0000${i.workerId}`;
    let g = groups.get(key);
    if (!g)
      groups.set(key, (g = { head: `{"workflow_id":${JSON.stringify(i.workflowId)},"worker_id":${JSON.stringify(i.workerId)},"attempts":[`, attempts: [] }));
    // a large output's text goes in as it is: no second serialisation of megabytes
    const output = i === apart ? 'null' : (i.outputText ?? JSON.stringify(i.output ?? null));
    const large = i.outputText !== undefined ? `,${Buffer.byteLength(i.outputText)}` : '';
    g.attempts.push(`[${JSON.stringify(i.name)},${i.attempt},${byTid && i.tid !== undefined ? JSON.stringify(i.tid) : 'null'},${output}${large}]`);
  }
  return `[${[...groups.values()].map((g) => `${g.head}${g.attempts.join(',')}]}`).join(',')}]`;
}

function completionKey(i: Completion): string {
  return `${i.workflowId}\u0000${i.name}`;
}

async function completeBatch(
  q: Queryable,
  ctx: StatementContext,
  items: readonly Completion[],
  { byTid, lean }: { byTid: boolean; lean: boolean },
  claim?: EagerClaim,
): Promise<CompletionResult> {
  const slots = claim
    ? Object.entries(claim.slots)
        .filter(([, n]) => n > 0)
        .map(([queue, n]) => ({ queue, n }))
    : [];
  const s = ctx.s;
  // a completion alone with a large output sends it as a parameter of its own: no batch JSON copies megabytes
  const apart = items.length === 1 && items[0].outputText !== undefined ? items[0] : undefined;
  const { rows } = await q.query<{
    skipped: { w: string; n: string }[] | null;
    finalize: string[] | null;
    claimed: ClaimedJson[] | null;
    claim: string | null;
    activated: { w: string; n: string }[] | null;
  }>(
    `SELECT skipped, claimed, claim, finalize, activated FROM ${s}.complete($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      attemptsJson(items, byTid, apart),
      ctx.now,
      [...new Set(items.map((i) => i.workflowId))],
      apart?.outputText ?? null,
      lean ? '[]' : JSON.stringify(slots),
      lean ? [] : (claim?.kinds ?? []),
      lean ? null : (claim?.workerId ?? null),
      byTid,
      lean,
    ],
    { prepare: true },
  );
  const r = rows[0];
  const skippedKeys = new Set((r.skipped ?? []).map((d) => `${d.w}\u0000${d.n}`));
  const skipped = skippedKeys.size === 0 ? [] : items.filter((i) => skippedKeys.has(completionKey(i)));
  const claimed = decodeClaimed(r.claimed);
  if (claimed.length > 0) {
    // deps completed in this very statement show their old rows to its subqueries: their outputs come from the
    // batch (a large one by name, as a claim gives it)
    const batch = new Map(items.filter((i) => !skippedKeys.has(completionKey(i))).map((i) => [completionKey(i), i]));
    for (const t of claimed) {
      const outputs: Record<string, unknown> = {};
      for (const d of t.deps) {
        const done = batch.get(`${t.workflow_id}\u0000${d}`);
        if (done?.outputText !== undefined) t.large_deps = [...(t.large_deps ?? []).filter((n) => n !== d), d];
        else outputs[d] = done ? (done.output ?? null) : (t.dep_outputs?.[d] ?? null);
      }
      t.dep_outputs = outputs;
    }
  }
  const activated = new Map<string, string[]>();
  for (const a of r.activated ?? []) activated.set(a.w, [...(activated.get(a.w) ?? []), a.n]);
  return { skipped, toFinalize: r.finalize ?? [], claimed, claim: r.claim, activated };
}

/**
 * The batch's attempts (items), the large output sent apart ($4) and the completed tasks (done): both variants
 * open so. Each task is found by address: the claimed row version's, or its key's looked up one by one, so no
 * plan scans the tasks table for the batch; the update joins the batch on the address (by the claim's) or on the
 * key (by the key's: a row that moved meanwhile is followed and checked again). The workflows' locks are taken
 * by the protocol's complete() in a statement of its own before this one (protocol.ts), so this statement's
 * snapshot already sees every change their holders made: an address it looks up is the row's current one.
 */
function completionHead(s: string, byTid: boolean, returning: string): string {
  return `${itemsSql(s, byTid)}, done AS (
       UPDATE ${s}.tasks t
          SET state = 'completed', output = v.output, output_bytes = v.output_bytes, finalized_at = $2, worker_id = NULL, completed_by = v.worker_id
         FROM items v
        WHERE t.ctid = ANY(ARRAY(SELECT tid FROM items WHERE tid IS NOT NULL)) AND ${byTid ? 't.ctid = v.tid AND ' : ''}t.workflow_id = v.workflow_id
          AND t.name = v.name AND t.attempt = v.attempt AND t.worker_id = v.worker_id
        ${returning}`;
}

/** The batch's attempts (`items`) and the large output sent apart (`apart`). */
function itemsSql(s: string, byTid: boolean): string {
  // by the claim's address: a row's ("(page,item)"), or an item's in its running range (`r<lo>:<index>`, completed there: range-completions.ts)
  const tid = byTid
    ? `CASE WHEN left(a->>2, 1) <> 'r' THEN (a->>2)::tid END`
    : `(SELECT x.ctid FROM ${s}.tasks x WHERE x.workflow_id = g.workflow_id AND x.name = a->>0)`;
  const rlo = byTid ? `CASE WHEN left(a->>2, 1) = 'r' THEN split_part(substr(a->>2, 2), ':', 1)::int END` : 'NULL::int';
  const ri = byTid ? `CASE WHEN left(a->>2, 1) = 'r' THEN split_part(a->>2, ':', 2)::int END` : 'NULL::int';
  return `WITH apart AS MATERIALIZED (
       SELECT $4::text::jsonb AS output
     ), items AS MATERIALIZED (
       SELECT g.workflow_id, g.worker_id, a->>0 AS name, (a->>1)::int AS attempt, ${tid} AS tid, ${rlo} AS rlo, ${ri} AS ri,
              CASE WHEN a->>4 IS NOT NULL AND $4::text IS NOT NULL THEN (SELECT output FROM apart) ELSE a->3 END AS output,
              (a->>4)::int AS output_bytes
         FROM jsonb_to_recordset($1::jsonb) AS g(workflow_id text, worker_id text, attempts jsonb), jsonb_array_elements(g.attempts) AS a
     )`;
}

/**
 * A batch of items of running ranges only (each by its `r<lo>:<index>` address): no task row to look for, so the
 * statement does not name tasks (an update of tasks opens each of its indexes, whatever it updates). Ranged items
 * have no dependents (engine/range-split.ts); one that gained some since is left to the pass by key.
 */
export function rangedOnlyCompletionSql(s: string): string {
  return `${itemsSql(s, true)}, ${rangedCompletionSql(s, 'AND cardinality(r.dependents) = 0')}, finished AS (
       SELECT workflow_id, name FROM ranged
     ), ${countedSql(s)}
     SELECT ${SKIPPED_SQL}, NULL::json AS claimed, NULL::text AS claim, ${FINALIZE_SQL}, NULL::json AS activated`;
}

/**
 * Counting the completed tasks off their workflows, each finalized in the statement when it completes with
 * nothing left to evaluate; one with an output template, or that fails (its definition may start a workflow on
 * failure, or keep it), is left to finalizeWorkflows (engine/settle.ts), in the same transaction or just after.
 * The workflows by key, their counts from a map (no join).
 */
function countedSql(s: string): string {
  const n = `((SELECT m FROM done_counts) ->> w.id)::int`;
  const inStatement = `w.tasks_open - ${n} = 0 AND w.output_template IS NULL AND w.state = 'running' AND ${finalWorkflowStateSql('w')} = 'completed'`;
  return `done_counts AS MATERIALIZED (
       SELECT jsonb_object_agg(workflow_id, n) AS m FROM (SELECT workflow_id, count(*)::int AS n FROM finished GROUP BY 1) c
     ), counted AS (
       UPDATE ${s}.workflows w
          SET tasks_open = w.tasks_open - ${n},
              state = CASE WHEN ${inStatement} THEN 'completed' ELSE w.state END,
              finalized_at = CASE WHEN ${inStatement} THEN $2 ELSE w.finalized_at END
        WHERE w.id = ANY(ARRAY(SELECT DISTINCT workflow_id FROM finished))
        RETURNING w.id, w.state, w.tasks_open
     )`;
}

/** The batch's attempts that took no effect: a set difference (no join, so no plan compares each with each). */
const SKIPPED_SQL = `(SELECT json_agg(json_build_object('w', v.workflow_id, 'n', v.name))
               FROM (SELECT workflow_id, name FROM items EXCEPT SELECT workflow_id, name FROM finished) v) AS skipped`;
const FINALIZE_SQL = `(SELECT json_agg(id) FROM counted WHERE tasks_open = 0 AND state = 'running') AS finalize`;

/**
 * A batch none of whose tasks has dependents: no edges to follow, nothing to claim. A task that gained
 * dependents since its claim is left alone (reported skipped) for the whole statement to complete.
 */
export function leanCompletionSql(s: string, byTid: boolean): string {
  return `${completionHead(s, byTid, 'AND cardinality(t.dependents) = 0 RETURNING t.workflow_id, t.name')}
     ), ${rangedCompletionSql(s, 'AND cardinality(r.dependents) = 0')}, finished AS (
       SELECT workflow_id, name FROM done UNION ALL SELECT workflow_id, name FROM ranged
     ), ${countedSql(s)}
     SELECT ${SKIPPED_SQL}, NULL::json AS claimed, NULL::text AS claim, ${FINALIZE_SQL}, NULL::json AS activated`;
}

/**
 * The whole completion: dependents advance (the advance wave over the completed tasks' edges, advance-wave.ts),
 * and those made available are claimed eagerly ($5 slots, $6 kinds, $7 worker).
 */
export function completionSql(s: string, byTid: boolean): string {
  return `${completionHead(s, byTid, 'RETURNING t.workflow_id, t.name, t.dependents')}
     ), ${rangedCompletionSql(s, '')}, finished AS (
       SELECT workflow_id, name, dependents FROM done UNION ALL SELECT workflow_id, name, dependents FROM ranged
     ), edges AS (
       SELECT d.workflow_id AS w, dep AS n, count(*)::int AS c, NULL::text AS end_state, NULL::text AS cause
         FROM finished d CROSS JOIN LATERAL unnest(d.dependents) AS dep
        WHERE cardinality(d.dependents) > 0 GROUP BY 1, 2
     ), eager AS MATERIALIZED (
       -- each dependent read by its key (a lateral look-up: no plan can scan the tasks for the edges)
       SELECT r.workflow_id, r.name FROM (
         SELECT t.workflow_id, t.name, l.n, row_number() OVER (PARTITION BY t.queue ORDER BY t.priority, t.id) AS rank
           FROM edges e
           CROSS JOIN LATERAL (SELECT * FROM ${s}.tasks y WHERE y.workflow_id = e.w AND y.name = e.n LIMIT 1) t
           JOIN jsonb_to_recordset($5::jsonb) AS l(queue text, n int) ON l.queue = t.queue
          WHERE t.state = 'pending' AND t.deps_left = e.c AND NOT ${heldSql('t')} AND t.scheduled_at <= $2 AND t.kind = ANY($6::text[])
            AND NOT ${pausedTaskSql(s, 't')} AND t.flow IS NULL /* a task with flow control is claimed by flow_pick() alone */) r
        WHERE r.rank <= r.n
     ), ${moveDependentsSql(s, {
       name: 'advanced',
       edges: 'edges',
       now: '$2',
       eager: { claimed: 'eager', workerId: '$7' },
       returning: (edge) => `t.workflow_id, t.name, t.template, t.kind, t.queue, t.state, t.attempt, t.max_attempts, t.args, t.deps,
                  t.dependents, t.dependents_wait, t.timeout_ms, t.start, t.deferred, t.wait_evidence, t.ctid AS tid, NULL::text AS flow_error,
                  ${edge.claimed} AS claimed, ${activatedSql('t', edge)} AS activated`,
     })}, recorded AS (
       ${recordClaimSql(s, '(SELECT workflow_id, name FROM advanced WHERE claimed) x', '$7', '$2')}
     ), ${countedSql(s)}
     SELECT ${SKIPPED_SQL},
            (SELECT json_agg(${claimedJson(s, 'c', depOutputsSql(s, 'c'))} ORDER BY c.workflow_id, c.name) FROM advanced c WHERE c.claimed) AS claimed,
            (SELECT id::text FROM recorded) AS claim,
            ${FINALIZE_SQL},
            (SELECT json_agg(json_build_object('w', workflow_id, 'n', name)) FROM advanced WHERE activated) AS activated`;
}

/** Of the given workflows, those running with every task closed: their output is still to be evaluated (lock held). */
export async function workflowsToFinalize(q: Queryable, s: string, ids: readonly string[]): Promise<WorkflowRow[]> {
  const { rows } = await q.query<WorkflowRow>(
    `SELECT ${WORKFLOW_ROW_COLUMNS} FROM ${s}.workflows WHERE id = ANY($1::text[]) AND state = 'running' AND tasks_open = 0`,
    [ids],
  );
  return rows;
}

/** Workflows a crash left with every task closed but not finalized (the leader sweeps them). */
export async function unfinalized(q: Queryable, s: string, limit = 100): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(`SELECT id FROM ${s}.workflows WHERE state = 'running' AND tasks_done LIMIT $1`, [limit]);
  return rows.map((r) => r.id);
}
