import type { Queryable } from '../db/types.js';
import type { Finalized, StatementContext } from './advance.js';
import { depOutcomeSql, heldSql, readyStateSql } from './rules.js';

/** A moved dependent's edge, as SQL expressions over the moved row: read by the update and by its RETURNING. */
export interface EdgeOf {
  /** How many of its deps ended that it had not counted yet. */
  c: string;
  /** 'cancelled' or 'skipped' when one of them fails or skips it, else null. */
  endState: string;
  /** The dependency error of a cancel. */
  cause: string;
  /** Claimed in this statement by the completing worker (an eager claim). */
  claimed: string;
}

/**
 * The advance wave, written once: the dependents of tasks that just ended move along their edges. Each edge
 * relation row is a dependent (w, n) with `c`, how many of its deps ended that it had not counted yet, and, when
 * one of them fails or skips it (decide.ts depsOutcome), `end_state` ('cancelled' or 'skipped') and `cause`.
 * A dependent that goes on counts its deps down (deps_left - c) and takes its ready state (pending while deps
 * are left or a wait or condition holds it, then scheduled or available), its wait starting once nothing is
 * left (a start a move kept stays); one that ends is final now, a cancel recorded as a dependency error. Only
 * pending rows move.
 *
 * Written as CTEs named after `o.name` (the last one the update): the dependents are found by address, each
 * address looked up by its key, and each moved row reads its edge from a map by its key. No join, so no plan
 * can compare every dependent with every task or edge: planned while the tables were tiny, a join here read
 * every task once per dependent (0.9 s to move 2,000 dependents among 22,000 tasks).
 *
 * A completion (sql/complete.ts) runs it over the edges of completed tasks, which satisfy every dependent, and
 * claims some of what it makes available at once (`eager`: the claimed rows, by workflow_id and name); every
 * other ending runs it through advanceWave below, one statement a wave, from engine/settle.ts.
 */
export function moveDependentsSql(
  s: string,
  o: { name: string; edges: string; now: string; returning: (edge: EdgeOf) => string; eager?: { claimed: string; workerId: string } },
): string {
  // a path look-up walks the map in place (an arrow per level would copy the workflow's whole map per look-up)
  const field = (i: number) => `((SELECT m FROM ${o.name}_edges) #>> ARRAY[t.workflow_id, t.name, '${i}'])`;
  const edge: EdgeOf = { c: `${field(0)}::int`, endState: field(1), cause: field(2), claimed: `coalesce(${field(3)}::boolean, false)` };
  const ending = `${edge.endState} IS NOT NULL`;
  const left = `t.deps_left - ${edge.c}`;
  const ready = readyStateSql({ depsLeft: left, held: heldSql('t'), scheduledAt: 't.scheduled_at' }, o.now);
  const eager = o.eager;
  const claimed = (value: string, otherwise: string) => (eager ? `CASE WHEN ${edge.claimed} THEN ${value} ELSE ${otherwise} END` : otherwise);
  // the claimed set as a map too: whether an edge's dependent was claimed is a look-up, not a join
  const claimedMap = eager
    ? `(SELECT jsonb_object_agg(x.workflow_id, x.names) FROM (SELECT workflow_id, jsonb_object_agg(name, true) AS names FROM ${eager.claimed} GROUP BY 1) x)`
    : `'{}'::jsonb`;
  return `${o.name}_edges AS MATERIALIZED (
       SELECT coalesce(jsonb_object_agg(g.w, g.dependents), '{}') AS m FROM (
         SELECT e.w, jsonb_object_agg(e.n, jsonb_build_array(e.c, e.end_state, e.cause, eager_map.k #> ARRAY[e.w, e.n])) AS dependents
           FROM ${o.edges} e, (SELECT ${claimedMap} AS k) eager_map GROUP BY e.w) g
     ), ${o.name} AS (
       UPDATE ${s}.tasks t
          SET deps_left = CASE WHEN ${ending} THEN t.deps_left ELSE ${left} END,
              state = CASE WHEN ${ending} THEN ${edge.endState} ELSE ${claimed("'running'", ready)} END,
              finalized_at = CASE WHEN ${ending} THEN ${o.now} ELSE t.finalized_at END,
              errors = CASE WHEN ${edge.endState} = 'cancelled'
                            THEN t.errors || jsonb_build_array(jsonb_build_object('attempt', 0, 'at', ${o.now}::timestamptz, 'kind', 'dependency',
                                                                                  'message', ${edge.cause}))
                            ELSE t.errors END,
              ${
                eager
                  ? `attempt = ${claimed('t.attempt + 1', 't.attempt')}, worker_id = ${claimed(eager.workerId, 't.worker_id')},
              started_at = ${claimed(o.now, 't.started_at')},`
                  : ''
              }
              wait_started_at = CASE WHEN NOT ${ending} AND ${left} = 0 AND t.wait IS NOT NULL THEN coalesce(t.wait_started_at, ${o.now})
                                     ELSE t.wait_started_at END
        WHERE t.ctid = ANY(ARRAY(SELECT (SELECT y.ctid FROM ${s}.tasks y WHERE y.workflow_id = e.w AND y.name = e.n) FROM ${o.edges} e))
          AND t.state = 'pending'
        RETURNING ${o.returning(edge)}
     )`;
}

/** A moved dependent whose wait (or condition) became ready in this wave: its deps just ran out and something holds it. */
export function activatedSql(t: string, edge: EdgeOf): string {
  return `(${t}.state = 'pending' AND ${t}.deps_left = 0 AND ${edge.c} > 0 AND ${edge.endState} IS NULL AND ${heldSql(t)})`;
}

/** What a wave did: the dependents it ended (the next wave), and those whose wait or condition became ready. */
export interface Wave {
  ended: Finalized[];
  waitsReady: string[];
}

/**
 * One wave of one workflow (its lock held), in one statement: the dependents of the tasks that ended (their
 * reverse edges given, or read from their rows) are decided by depOutcomeSql over every dep that ended, the
 * first to fail (or else skip) them named, and moved by moveDependentsSql.
 */
export async function advanceWave(q: Queryable, ctx: StatementContext, workflowId: string, ended: readonly Finalized[]): Promise<Wave> {
  const s = ctx.s;
  const { rows } = await q.query<{ ended: { name: string; state: 'cancelled' | 'skipped'; dependents: string[] }[] | null; ready: string[] | null }>(
    `WITH ended AS (
       SELECT * FROM jsonb_to_recordset($2::jsonb) AS e(i int, name text, state text, dependents text[], counted boolean)
     ), edge AS (
       SELECT e.i, e.name AS dep, e.state AS dep_state, e.counted, d.n AS dependent
         FROM ended e
         LEFT JOIN ${s}.tasks src ON e.dependents IS NULL AND src.workflow_id = $1 AND src.name = e.name
         CROSS JOIN LATERAL unnest(coalesce(e.dependents, src.dependents)) AS d(n)
     ), judged AS (
       SELECT x.dependent, count(*) FILTER (WHERE NOT x.counted)::int AS c,
              (array_agg(format('dependency "%s" was %s', x.dep, x.dep_state) ORDER BY x.i) FILTER (WHERE x.o = 'failed'))[1] AS failed,
              coalesce(bool_or(x.o = 'skipped'), false) AS skipped
         FROM (SELECT x.*, ${depOutcomeSql('x.dep_state', 't')} AS o
                 FROM edge x JOIN ${s}.tasks t ON t.workflow_id = $1 AND t.name = x.dependent AND t.state = 'pending') x
        GROUP BY x.dependent
     ), edges AS (
       SELECT $1::text AS w, dependent AS n, c, CASE WHEN failed IS NOT NULL THEN 'cancelled' WHEN skipped THEN 'skipped' END AS end_state,
              failed AS cause
         FROM judged
     ), ${moveDependentsSql(s, {
       name: 'moved',
       edges: 'edges',
       now: '$3',
       returning: (edge) => `t.name, t.state, t.dependents, ${activatedSql('t', edge)} AS activated`,
     })}
     SELECT (SELECT json_agg(json_build_object('name', name, 'state', state, 'dependents', dependents) ORDER BY name)
               FROM moved WHERE state IN ('cancelled', 'skipped')) AS ended,
            (SELECT json_agg(name ORDER BY name) FROM moved WHERE activated) AS ready`,
    [
      workflowId,
      JSON.stringify(
        ended.map((f, i) => ({ i, name: f.name, state: f.state, dependents: f.dependents ?? null, counted: f.dependentsCounted ?? f.alreadyClosed ?? false })),
      ),
      ctx.now,
    ],
  );
  return { ended: rows[0]?.ended ?? [], waitsReady: rows[0]?.ready ?? [] };
}
