import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { fetchTasks } from '../src/runtime/sql/fetch.js';
import { BENCH_APP, type Cost, costWindow, openMonitor } from './cost.js';
import { size } from './size.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const SCHEMA = 'braid_bench_claims';
const QUEUE = size('BENCH_CLAIM_QUEUE', 200_000, 2_000);
const PER_WORKFLOW = Math.min(QUEUE, 10_000);
/** A claim's size: the batched worker's prefetch. */
const LIMIT = 500;
/** Keyed items, so each is a row of `tasks` (a range's items are never keyed): the claim's index walk is what is measured. */
const DEF =
  'name: many\ninputs: { type: object, properties: { items: { type: array } }, required: [items] }\ntasks:\n' +
  '  t: { kind: noop, for_each: "${{ inputs.items }}", key: "${{ string(item) }}" }\n';

/**
 * The claim's cost per task at the start and at the end of one queue of QUEUE tasks, claimed LIMIT at a time by
 * one worker while an older snapshot is open elsewhere (a report, a backup: the claimed tasks' index entries
 * cannot be marked dead meanwhile). Resumed: each claim starts where the last stopped, as braid's worker claims;
 * from the start: every claim starts at the queue's start, as braid claimed before (the same queue put back).
 */
export async function benchClaims(): Promise<void> {
  const db = createPostgres({ connectionString: url, max: 4, applicationName: BENCH_APP });
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const rt = createRuntime({ database: db, schema: SCHEMA, handlers: {}, queues: { default: 1 }, limits: { forEachItems: PER_WORKFLOW } });
  await rt.migrate();
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-claims-'));
  writeFileSync(join(dir, 'many.yaml'), DEF);
  await rt.registerDefinitions(dir);
  for (let i = 0; i < QUEUE; i += PER_WORKFLOW) await rt.start('many', { items: Array.from({ length: Math.min(PER_WORKFLOW, QUEUE - i) }, (_, n) => n) });
  const monitor = await openMonitor(url);
  const older = new pg.Client({ connectionString: url });
  await older.connect();
  try {
    const resumed = await claimAll(db, monitor, older, true);
    const fromStart = await claimAll(db, monitor, older, false);
    console.log(`\nclaims: one worker claims a queue of ${QUEUE} tasks ${LIMIT} at a time, an older snapshot open elsewhere`);
    for (const [label, m] of [
      ['resumed where the last claim stopped', resumed],
      ['each from the queue start (before)', fromStart],
    ] as const) {
      console.log(
        `  braid, ${label.padEnd(38)} first 10% ${m.first.toFixed(1).padStart(6)} µs/task, last 10% ${m.last.toFixed(1).padStart(6)} µs/task: ` +
          `${(m.last / m.first).toFixed(2)}x`,
      );
    }
    console.log(`  ratio claim cost per task, last 10% / first 10% of the queue: ${(resumed.last / resumed.first).toFixed(2)}x (goal within 0.8x-1.2x)`);
  } finally {
    await older.end();
    await monitor.end();
    await rt.stop(5000);
    await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await db.close();
  }
}

type Db = ReturnType<typeof createPostgres>;

/** Claims the whole queue; the CPU per task (client and server) of its first and of its last tenth of claims. */
async function claimAll(db: Db, monitor: pg.Client, older: pg.Client, resume: boolean): Promise<{ first: number; last: number }> {
  // both ways claim the same queue from the same state: its rows put back as never claimed, vacuumed
  await db.query(`UPDATE ${SCHEMA}.tasks SET state = 'available', attempt = 0, worker_id = NULL, started_at = NULL`);
  await db.query(`VACUUM ANALYZE ${SCHEMA}.tasks`);
  await older.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await older.query(`SELECT count(*) FROM ${SCHEMA}.tasks`);
  // the connection plans the claim at its first call (tens of ms): a claim of an empty queue does that before the window
  for (let i = 0; i < 2; i++) await fetchTasks(db, SCHEMA, { queue: 'empty', kinds: ['noop'], limit: LIMIT, workerId: 'bench', now: new Date() });
  const claims = Math.ceil(QUEUE / LIMIT);
  const tenth = Math.max(1, Math.floor(claims / 10));
  let after: string | null = null;
  let window: { end: () => Promise<Cost> } | undefined;
  let claimed = 0;
  const perTask: number[] = [];
  for (let i = 0; i < claims; i++) {
    if (i === 0 || i === claims - tenth) {
      window = await costWindow(monitor);
      claimed = 0;
    }
    const fetched = await fetchTasks(db, SCHEMA, { queue: 'default', kinds: ['noop'], limit: LIMIT, workerId: 'bench', now: new Date(), after });
    after = resume ? fetched.after : null;
    claimed += fetched.tasks.length;
    if (i === tenth - 1 || i === claims - 1) {
      const cost = await window!.end();
      perTask.push((cost.clientUs + (cost.serverUs ?? 0)) / Math.max(1, claimed));
    }
  }
  await older.query('ROLLBACK');
  return { first: perTask[0], last: perTask[1] };
}
