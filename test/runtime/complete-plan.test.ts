import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/runtime/db/types.js';
import { completionSql, leanCompletionSql } from '../../src/runtime/sql/complete.js';
import { fetchSql, fetchTasks } from '../../src/runtime/sql/fetch.js';
import { FAN_IN, nodes, type PlanNode } from '../helpers/plans.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const ONE = 'name: one\ntasks:\n  t: { kind: other }\n';
const BATCH = 500;

/** The most rows one join of the plan removed by its filter, over all its loops (EXPLAIN shows them per loop). */
function removedByJoinFilter(plan: PlanNode): number {
  return Math.max(0, ...nodes(plan).map((n) => (n['Rows Removed by Join Filter'] ?? 0) * (n['Actual Loops'] ?? 1)));
}

/** Runs a prepared statement under a plan cache mode, with EXPLAIN ANALYZE, and undoes what it did. */
async function executed(tx: Queryable, mode: string, execute: string): Promise<PlanNode> {
  await tx.query('SAVEPOINT plan');
  await tx.query(`SET LOCAL plan_cache_mode = ${mode}`);
  const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${execute}`);
  await tx.query('ROLLBACK TO SAVEPOINT plan');
  return rows[0]['QUERY PLAN'][0].Plan;
}

/**
 * The statistics a deployment may hold when a connection plans its statements: `workflows` and `tasks` analyzed
 * while they held one row (a young deployment, autovacuum), analyzed populated, or never analyzed.
 */
const STATISTICS = ['analyzed nearly empty', 'analyzed populated', 'never analyzed'] as const;

async function deployment(statistics: (typeof STATISTICS)[number]) {
  const rt = await drivenRuntime({ definitions: { many: FAN_IN, one: ONE }, handlers: { noop: async () => null } });
  const s = `"${rt.schema}"`;
  const analyze = async () => {
    await rt.db.query(`ANALYZE ${s}.workflows`);
    await rt.db.query(`ANALYZE ${s}.tasks`);
  };
  if (statistics === 'analyzed nearly empty') {
    await rt.start('one', {});
    await analyze();
  }
  const many = await rt.start('many', { items: Array.from({ length: 2 * BATCH }, (_, n) => n) });
  await rt.startMany(
    'one',
    Array.from({ length: BATCH }, () => ({})),
  );
  if (statistics === 'analyzed populated') await analyze();
  return { rt, s, many };
}

describe(`no batch statement can go quadratic (${backend})`, () => {
  for (const statistics of STATISTICS) {
    it(`claim and completion of ${BATCH} tasks, ${statistics}, generic and custom plans: rows removed by a join filter at most the batch`, async () => {
      const { rt, s } = await deployment(statistics);
      // 500 tasks of one workflow (with a dependent each) and 500 one-task workflows, claimed by w1
      const noop = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['noop'], limit: BATCH, workerId: 'w1', now: new Date() });
      const other = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['other'], limit: BATCH, workerId: 'w1', now: new Date() });
      expect([noop.tasks.length, other.tasks.length]).toEqual([BATCH, BATCH]);
      const batchOf = (tasks: typeof noop.tasks, byTid: boolean) => {
        const groups = new Map<string, unknown[][]>();
        for (const t of tasks) groups.set(t.workflow_id, [...(groups.get(t.workflow_id) ?? []), [t.name, t.attempt, byTid ? t.tid : null, { n: 1 }]]);
        const json = JSON.stringify([...groups].map(([workflow_id, attempts]) => ({ workflow_id, worker_id: 'w1', attempts })));
        return `'${json}', now(), ARRAY[${[...groups.keys()].map((id) => `'${id}'`).join(',')}]::text[], NULL`;
      };
      // prepared statements outlive the transaction on the pool's connection: named for this test alone
      const tag = STATISTICS.indexOf(statistics);
      await rt.db.transaction(async (tx) => {
        await tx.query(`PREPARE claim_${tag}(text, text[], int, text, timestamptz, bigint[], int, text[], jsonb) AS ${fetchSql(s)}`);
        for (const byTid of [true, false]) {
          await tx.query(`PREPARE lean_${byTid}_${tag}(jsonb, timestamptz, text[], text) AS ${leanCompletionSql(s, byTid)}`);
          await tx.query(`PREPARE whole_${byTid}_${tag}(jsonb, timestamptz, text[], text, jsonb, text[], text) AS ${completionSql(s, byTid)}`);
        }
        for (const mode of ['force_generic_plan', 'force_custom_plan']) {
          const plans: Record<string, PlanNode> = {
            claim: await executed(tx, mode, `claim_${tag}('default', ARRAY['noop'], ${BATCH}, 'w2', now(), ARRAY[]::bigint[], ${BATCH}, NULL, NULL)`),
          };
          for (const byTid of [true, false]) {
            plans[`lean, one-task workflows, by tid ${byTid}`] = await executed(tx, mode, `lean_${byTid}_${tag}(${batchOf(other.tasks, byTid)})`);
            plans[`whole, one workflow, by tid ${byTid}`] = await executed(
              tx,
              mode,
              `whole_${byTid}_${tag}(${batchOf(noop.tasks, byTid)}, '[{"queue":"default","n":${BATCH}}]', ARRAY['noop'], 'w1')`,
            );
            plans[`whole, one-task workflows, by tid ${byTid}`] = await executed(
              tx,
              mode,
              `whole_${byTid}_${tag}(${batchOf(other.tasks, byTid)}, '[]', ARRAY[]::text[], 'w1')`,
            );
          }
          for (const [statement, plan] of Object.entries(plans)) expect(removedByJoinFilter(plan), `${statement}, ${mode}`).toBeLessThanOrEqual(BATCH);
        }
      });
    }, 120_000);
  }
});
