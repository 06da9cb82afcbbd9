import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime } from '../src/runtime/runtime.js';
import type { WorkflowSearch } from '../src/runtime/wire/index.js';
import { size } from './size.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const SCHEMA = 'braid_bench_search';
const WORKFLOWS = size('BENCH_SEARCH_WORKFLOWS', 100_000, 1_000);
const ROUNDS = size('BENCH_ROUNDS', 7, 1);

/**
 * The operator's searches (braid list, GET /api/workflows, the UI) over 100,000 workflows: a business-key
 * prefix, an inputs value, the top-level list, a name and state, a time range; the median of ROUNDS each.
 */
export async function benchSearch(): Promise<void> {
  const db = createPostgres({ connectionString: url, max: 4 });
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const rt = createRuntime({ database: db, schema: SCHEMA });
  await rt.migrate();
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-search-'));
  writeFileSync(
    join(dir, 'order.yaml'),
    'name: order\ninputs: { type: object, properties: { customer_id: { type: string }, n: { type: integer } } }\ntasks:\n  t: { kind: t }\n',
  );
  await rt.registerDefinitions(dir);
  const seed = await rt.start('order', { customer_id: 'c0', n: 0 }, { id: 'order:seed' });
  const s = `"${SCHEMA}"`;
  // copies of the seed row: business keys order:oN, 1,000 customers, one in ten a child, a quarter finished
  // (in batches: each statement stays within the database call's deadline)
  // every column but the generated ones (the database computes those)
  const { rows: cols } = await db.query<{ c: string }>(
    `SELECT quote_ident(column_name) AS c FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = 'workflows' AND is_generated = 'NEVER' ORDER BY ordinal_position`,
    [SCHEMA],
  );
  const columns = cols.map((r) => r.c).join(', ');
  for (let from = 1; from <= WORKFLOWS; from += 10_000)
    await db.query(
      `INSERT INTO ${s}.workflows (${columns})
     SELECT ${cols.map((r) => `x.${r.c}`).join(', ')} FROM ${s}.workflows w, generate_series($1::int, $2::int) AS i,
     LATERAL jsonb_populate_record(null::${s}.workflows, to_jsonb(w) || jsonb_build_object(
              'id', 'order:o' || i,
              'inputs', jsonb_build_object('customer_id', 'c' || (i % 1000), 'n', i),
              'created_at', now() - (i || ' seconds')::interval,
              'parent_id', CASE WHEN i % 10 = 0 THEN 'order:o' || (i + 1) END,
              'state', CASE WHEN i % 4 = 0 THEN 'completed' ELSE 'running' END,
              'finalized_at', CASE WHEN i % 4 = 0 THEN now() - ((i / 2) || ' seconds')::interval END)) AS x
      WHERE w.id = $3`,
      [from, Math.min(from + 9_999, WORKFLOWS), seed],
    );
  await db.query(`ANALYZE ${s}.workflows`);
  const searches: [string, WorkflowSearch][] = [
    ['key prefix order:o4242*', { idPrefix: 'order:o4242' }],
    ['input customer_id=c42', { inputs: [{ path: 'customer_id', value: 'c42' }] }],
    ['top level, first page', { topLevel: true }],
    ['name and state', { name: 'order', state: 'completed' }],
    [
      'created in one hour, top level',
      { createdAfter: new Date(Date.now() - 7_200_000).toISOString(), createdBefore: new Date(Date.now() - 3_600_000).toISOString(), topLevel: true },
    ],
    ['prefix and input together', { idPrefix: 'order:o1', inputs: [{ path: 'customer_id', value: 'c7' }] }],
  ];
  console.log(`\nsearch: ${WORKFLOWS.toLocaleString('en-US')} workflows on Postgres, a page of 50, median of ${ROUNDS}`);
  for (const [label, search] of searches) {
    const times: number[] = [];
    let found = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      found = (await rt.listWorkflows({ ...search, limit: 50 })).workflows.length;
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    console.log(`  ${label.padEnd(34)} ${times[Math.floor(ROUNDS / 2)].toFixed(1).padStart(7)} ms   (${found} on the page; goal < 300 ms)`);
  }
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await rt.stop(0);
  await db.close();
}
