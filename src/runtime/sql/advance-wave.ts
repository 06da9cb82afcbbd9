import type { Queryable } from '../db/types.js';
import type { Finalized, StatementContext } from './advance.js';
import { depOutcomeSql, heldSql, readyStateSql } from './rules.js';

/**
 * The advance wave, written once: the dependents of tasks that just ended move along their edges. Each edge
 * relation row is a dependent (w, n) with `c`, how many of its deps ended that it had not counted yet, and, when
 * one of them fails or skips it (decide.ts depsOutcome), `end_state` ('cancelled' or 'skipped') and `cause`.
 * A dependent that goes on counts its deps down (deps_left - c) and takes its ready state (pending while deps
 * are left or a wait or condition holds it, then scheduled or available), its wait starting once nothing is
 * left (a start a move kept stays); one that ends is final now, a cancel recorded as a dependency error. Only
 * pending rows move.
 *
 * A completion (sql/complete.ts) runs it over the edges of completed tasks, which satisfy every dependent, and
 * claims some of what it makes available at once (`eager`: the claimed rows, by workflow_id and name); every
 * other ending runs it through advanceWave below, one statement a wave, from engine/settle.ts.
 */
export function moveDependentsSql(s: string, o: { edges: string; now: string; returning: string; eager?: { claimed: string; workerId: string } }): string {
  const ending = 'e.end_state IS NOT NULL';
  const left = 't.deps_left - e.c';
  const ready = readyStateSql({ depsLeft: left, held: heldSql('t'), scheduledAt: 't.scheduled_at' }, o.now);
  const eager = o.eager;
  const claimed = (value: string, otherwise: string) => (eager ? `CASE WHEN x.name IS NOT NULL THEN ${value} ELSE ${otherwise} END` : otherwise);
  return `UPDATE ${s}.tasks t
          SET deps_left = CASE WHEN ${ending} THEN t.deps_left ELSE ${left} END,
              state = CASE WHEN ${ending} THEN e.end_state ELSE ${claimed("'running'", ready)} END,
              finalized_at = CASE WHEN ${ending} THEN ${o.now} ELSE t.finalized_at END,
              errors = CASE WHEN e.end_state = 'cancelled'
                            THEN t.errors || jsonb_build_array(jsonb_build_object('attempt', 0, 'at', ${o.now}::timestamptz, 'kind', 'dependency',
                                                                                  'message', e.cause))
                            ELSE t.errors END,
              ${
                eager
                  ? `attempt = ${claimed('t.attempt + 1', 't.attempt')}, worker_id = ${claimed(eager.workerId, 't.worker_id')},
              started_at = ${claimed(o.now, 't.started_at')},`
                  : ''
              }
              wait_started_at = CASE WHEN NOT ${ending} AND ${left} = 0 AND t.wait IS NOT NULL THEN coalesce(t.wait_started_at, ${o.now})
                                     ELSE t.wait_started_at END
         FROM ${o.edges} e${eager ? ` LEFT JOIN ${eager.claimed} x ON x.workflow_id = e.w AND x.name = e.n` : ''}
        WHERE t.workflow_id = e.w AND t.name = e.n AND t.state = 'pending'
        RETURNING ${o.returning}`;
}

/** A moved dependent whose wait (or condition) became ready in this wave: its deps just ran out and something holds it. */
export function activatedSql(t: string, e: string): string {
  return `(${t}.state = 'pending' AND ${t}.deps_left = 0 AND ${e}.c > 0 AND ${e}.end_state IS NULL AND ${heldSql(t)})`;
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
     ), moved AS (
       ${moveDependentsSql(s, { edges: 'edges', now: '$3', returning: `t.name, t.state, t.dependents, ${activatedSql('t', 'e')} AS activated` })}
     )
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
