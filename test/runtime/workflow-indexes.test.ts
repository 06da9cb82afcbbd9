import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/runtime/db/types.js';
import { pastDeadline } from '../../src/runtime/sql/cancel.js';
import { unfinalized } from '../../src/runtime/sql/complete.js';
import { pendingDebounced } from '../../src/runtime/sql/debounce.js';
import { versionsInUse } from '../../src/runtime/sql/deploy.js';
import { deleteExpiredWorkflows } from '../../src/runtime/sql/maintenance.js';
import { recentRuns, runningRuns } from '../../src/runtime/sql/schedules.js';
import { listWorkflows } from '../../src/runtime/sql/workflows.js';
import { nodes, type PlanNode } from '../helpers/plans.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

type Statement = { sql: string; params: unknown[] };

/**
 * Each index of `workflows` and the braid statement that needs it: what keeps the index worth its cost on every
 * start and every end of a workflow. An index added without a statement here fails the test, so does one that
 * no statement uses any more (drop it), and so does an entry whose statement reads the table another way.
 */
const USES: Record<string, (q: Queryable, s: string) => Promise<unknown>> = {
  workflows_created: (q, s) => listWorkflows(q, s, { limit: 50 }),
  workflows_top_level: (q, s) => listWorkflows(q, s, { topLevel: true, limit: 50 }),
  workflows_name_created: (q, s) => listWorkflows(q, s, { name: 'refund', limit: 50 }),
  workflows_id_prefix: (q, s) => listWorkflows(q, s, { idPrefix: '01JX', limit: 50 }),
  workflows_inputs: (q, s) => listWorkflows(q, s, { inputs: [{ path: 'customer', value: 'c-1' }], limit: 50 }),
  workflows_parent: (q, s) => listWorkflows(q, s, { parentId: 'w-40', limit: 50 }),
  workflows_deadline: (q, s) => pastDeadline(q, s, new Date(), 100),
  workflows_to_finalize: (q, s) => unfinalized(q, s, 100),
  workflows_debounce: (q, s) => pendingDebounced(q, s, 'order', 'c-1', new Date()),
  workflows_running_version: (q, s) => versionsInUse(q, s, ['order']),
  workflows_schedule_running: (q, s) => runningRuns(q, s, 'order', 'nightly'),
  workflows_schedule_runs: (q, s) => recentRuns(q, s, [{ workflow: 'order', name: 'nightly' }], 10),
  workflows_finalized: (q, s) => deleteExpiredWorkflows(q, s, { closedMs: 86_400_000, cancelledMs: null, taskMs: null, auditMs: 0 }, new Date(), 100),
  workflows_kept: (q, s) => deleteExpiredWorkflows(q, s, { closedMs: null, cancelledMs: null, taskMs: null, auditMs: 0 }, new Date(), 100),
};

/**
 * Workflows as a deployment that ran a while holds them: 6,000 finished runs, nearly all of one name, a thousand of them a
 * schedule's, with few running, a few children, kept failures, debounced and deadlined runs, analyzed: the
 * planner then chooses between indexes as it would there.
 */
async function populate(q: Queryable, s: string): Promise<void> {
  await q.query(
    `INSERT INTO ${s}.workflows (id, name, definition_hash, state, inputs, tasks_total, tasks_open, parent_id, created_at, attempt_started_at,
                                 finalized_at, deadline_at, schedule, debounce_key, keep_until)
     SELECT 'w-' || g, CASE WHEN g % 100 = 7 THEN 'refund' ELSE 'order' END, 'h' || (g % 3), CASE WHEN g % 50 = 0 THEN 'running' WHEN g % 97 = 0 THEN 'failed' ELSE 'completed' END,
            jsonb_build_object('customer', 'c-' || (g % 500)), 1, CASE WHEN g % 50 = 0 THEN 1 ELSE 0 END,
            CASE WHEN g % 40 = 1 THEN 'w-' || (g - 1) END, now() - g * interval '1 minute', now() - g * interval '1 minute',
            CASE WHEN g % 50 <> 0 THEN now() - g * interval '1 minute' END, CASE WHEN g % 100 = 0 THEN now() + interval '1 hour' END,
            CASE WHEN g % 6 = 0 THEN 'nightly' END, CASE WHEN g % 1000 = 0 THEN 'c-' || g END, CASE WHEN g % 970 = 0 THEN now() + interval '1 day' END
       FROM generate_series(1, 6000) g`,
  );
  await q.query(`ANALYZE ${s}.workflows`);
}

/** The statements a function sends, none of them run (each answered with no rows). */
async function statementsOf(use: (q: Queryable, s: string) => Promise<unknown>, s: string): Promise<Statement[]> {
  const sent: Statement[] = [];
  const recorder = {
    query: async (sql: string, params: unknown[] = []) => {
      sent.push({ sql, params });
      return { rows: [], rowCount: 0 };
    },
  } as unknown as Queryable;
  // what it does with no rows does not matter: its statements are sent already
  await use(recorder, s).catch(() => undefined);
  return sent;
}

describe(`every index of workflows is used by a braid statement (${backend})`, () => {
  it('the schema indexes and the statements that need them match one for one', async () => {
    const rt = await drivenRuntime();
    const s = `"${rt.schema}"`;
    const { rows } = await rt.db.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'workflows'`, [
      rt.schema,
    ]);
    // the primary key's index is the constraint's (unique ids, the foreign keys to them): it needs no statement
    const indexes = rows
      .map((r) => r.indexname)
      .filter((i) => i !== 'workflows_pkey')
      .sort();
    expect(rows.map((r) => r.indexname)).toContain('workflows_pkey');
    expect(Object.keys(USES).sort()).toEqual(indexes);
    await populate(rt.db, s);
    const unused: string[] = [];
    await rt.db.transaction(async (tx) => {
      // an empty table is read whole for less than any index costs: only the choice between indexes is asked
      await tx.query('SET LOCAL enable_seqscan = off');
      for (const index of indexes) {
        const used = new Set<string>();
        for (const st of await statementsOf(USES[index], s)) {
          const { rows: plan } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${st.sql}`, st.params);
          for (const n of nodes(plan[0]['QUERY PLAN'][0].Plan)) if (n['Index Name']) used.add(n['Index Name']);
        }
        if (!used.has(index)) unused.push(`${index} (its statement used ${[...used].join(', ') || 'no index'})`);
      }
    });
    expect(unused).toEqual([]);
  });
});
