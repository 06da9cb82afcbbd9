import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/runtime/db/types.js';
import { completionSql, leanCompletionSql } from '../../src/runtime/sql/complete.js';
import { fetchSql } from '../../src/runtime/sql/fetch.js';
import { FAN_IN, nodes, type PlanNode } from '../helpers/plans.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const ONE = 'name: one\ntasks:\n  t: { kind: noop }\n';

/** A schema as a busy deployment has it: 10,000 tasks in four workflows, and 3,000 one-task workflows. */
async function populated(): Promise<{ rt: Awaited<ReturnType<typeof drivenRuntime>>; s: string; ids: string[] }> {
  const rt = await drivenRuntime({ definitions: { many: FAN_IN, one: ONE }, handlers: { noop: async () => null } });
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await rt.start('many', { items: Array.from({ length: 2500 }, (_, n) => n) }));
  for (let i = 0; i < 3; i++)
    await rt.startMany(
      'one',
      Array.from({ length: 1000 }, () => ({})),
    );
  const s = `"${rt.schema}"`;
  await rt.db.query(`ANALYZE ${s}.tasks`);
  await rt.db.query(`ANALYZE ${s}.workflows`);
  return { rt, s, ids };
}

/** The plan of a prepared statement under a plan cache mode (generic: what Postgres switches to after five runs). */
async function planOf(tx: Queryable, name: string, mode: 'force_generic_plan' | 'force_custom_plan', execute: string): Promise<PlanNode[]> {
  await tx.query(`SET LOCAL plan_cache_mode = ${mode}`);
  const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name}${execute}`);
  return nodes(rows[0]['QUERY PLAN'][0].Plan);
}

const scans = (plan: PlanNode[], table: string) => plan.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === table);

describe(`the claim and the completion keep their plans (${backend})`, () => {
  it('claim, items one by one and as running ranges: the available tasks through tasks_fetch, never a scan of the tasks table, generic or custom', async () => {
    const { rt, s } = await populated();
    await rt.db.transaction(async (tx) => {
      for (const compact of [false, true]) {
        await tx.query(`PREPARE claim(text, text[], int, text, timestamptz, bigint[], int, text[], jsonb) AS ${fetchSql(s, compact)}`);
        for (const mode of ['force_generic_plan', 'force_custom_plan'] as const) {
          const plan = await planOf(
            tx,
            'claim',
            mode,
            `('default', ARRAY['noop'], 500, 'w1', now(), ARRAY[]::bigint[], 0, ARRAY['k1'], '[4, "2026-01-01T00:00:00+00:00", 7]')`,
          );
          expect(scans(plan, 'tasks'), `${mode}, compact ${compact}`).toEqual([]);
          expect(
            plan.some((n) => n['Index Name'] === 'tasks_fetch'),
            mode,
          ).toBe(true);
        }
        await tx.query('DEALLOCATE claim');
      }
    });
  });

  it('completion, lean and whole: the attempts by address or key, their workflows by key', async () => {
    const { rt, s, ids } = await populated();
    const batch = JSON.stringify([{ workflow_id: ids[0], worker_id: 'w1', attempts: [['t[0]', 1, '(0,1)', null]] }]);
    await rt.db.transaction(async (tx) => {
      for (const byTid of [true, false]) {
        await tx.query(`PREPARE lean(jsonb, timestamptz, text[], text) AS ${leanCompletionSql(s, byTid)}`);
        await tx.query(`PREPARE whole(jsonb, timestamptz, text[], text, jsonb, text[], text) AS ${completionSql(s, byTid)}`);
        for (const mode of ['force_generic_plan', 'force_custom_plan'] as const) {
          const args = `('${batch}', now(), ARRAY['${ids[0]}'], NULL`;
          const lean = await planOf(tx, 'lean', mode, `${args})`);
          const whole = await planOf(tx, 'whole', mode, `${args}, '[{"queue":"default","n":10}]', ARRAY['noop'], 'w1')`);
          for (const plan of [lean, whole]) {
            expect(scans(plan, 'tasks'), `${mode} by tid ${byTid}`).toEqual([]);
            expect(scans(plan, 'workflows'), `${mode} by tid ${byTid}`).toEqual([]);
          }
        }
        await tx.query('DEALLOCATE lean');
        await tx.query('DEALLOCATE whole');
      }
    });
  });
});
