import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jitterOffset } from '../src/compiler/schedule/ticks.js';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { size } from './size.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const SCHEMA = 'braid_bench_schedules';
const WORKFLOWS = size('BENCH_SCHEDULE_WORKFLOWS', 100, 2);
const PER_WORKFLOW = size('BENCH_SCHEDULES_PER_WORKFLOW', 100, 5);
const JITTER_MS = size('BENCH_SCHEDULE_JITTER_MS', 30_000, 1_000);
/** How far on the first tick is at least: time for the deploy and the leader. */
const LEAD_MS = size('BENCH_SCHEDULE_LEAD_MS', 40_000, 5_000);

/**
 * 10,000 schedules on one cron line (every minute, jitter 30s), one leader: each tick of one minute must start
 * within the jitter window plus 2 s, each at its own offset; and no session may wait on a lock over 100 ms
 * meanwhile (pg_stat_activity sampled every 20 ms). The runs' tasks are on a queue another fleet of workers
 * would serve, so the figures are the schedules service's own, not those of 10,000 handlers on two cores.
 */
export async function benchSchedules(): Promise<void> {
  const admin = createPostgres({ connectionString: url, max: 2 });
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const db = createPostgres({ connectionString: url, max: 12 });
  const said: string[] = [];
  const logger = { info: () => undefined, taskDone: () => undefined, warn: (m: string) => void said.push(m) };
  const rt = createRuntime({ database: db, schema: SCHEMA, queues: { default: 20 }, handlers: { ping: async () => ({}) }, leaderLeaseMs: 10_000, logger });
  await rt.migrate();
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-schedules-'));
  // the first minute they tick: far enough on for the deploy and the leader to be ready, and no tick before it
  const minute = Math.ceil((Date.now() + LEAD_MS) / 60_000) * 60_000;
  const startAt = new Date(minute).toISOString();
  for (let w = 0; w < WORKFLOWS; w++) {
    const schedules = Array.from(
      { length: PER_WORKFLOW },
      (_, i) => `  - { name: s${i}, cron: "* * * * *", jitter: ${JITTER_MS / 1000}s, overlap: allow, start_at: "${startAt}" }`,
    ).join('\n');
    writeFileSync(join(dir, `ping_${w}.yaml`), `name: ping_${w}\nschedules:\n${schedules}\ntasks:\n  t: { kind: ping, queue: elsewhere }\n`);
  }
  const deployStart = performance.now();
  await rt.registerDefinitions(dir);
  const deployMs = performance.now() - deployStart;
  await rt.startWorker();
  let maxLockWaitMs = 0;
  let longestWaiter = '';
  const sampling = setInterval(() => {
    void admin
      .query<{ ms: number; query: string }>(
        `SELECT (extract(epoch FROM clock_timestamp() - state_change) * 1000)::float8 AS ms, left(query, 120) AS query FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND datname = current_database() ORDER BY 1 DESC LIMIT 1`,
      )
      .then(({ rows }) => {
        if (rows[0] && rows[0].ms > maxLockWaitMs) [maxLockWaitMs, longestWaiter] = [rows[0].ms, rows[0].query.replace(/\s+/g, ' ')];
      })
      .catch(() => undefined);
  }, 20);
  const expected = WORKFLOWS * PER_WORKFLOW;
  const tickIso = new Date(minute).toISOString().replace('.000Z', 'Z');
  const count = async () =>
    (await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${SCHEMA}".workflows WHERE id LIKE '%:' || $1`, [tickIso])).rows[0].n;
  const deadline = minute + JITTER_MS + 2_000;
  while (Date.now() < deadline + 10_000 && (await count()) < expected) await new Promise((r) => setTimeout(r, 250));
  clearInterval(sampling);
  const { rows } = await admin.query<{ id: string; name: string; created: Date }>(
    `SELECT id, name, created_at AS created FROM "${SCHEMA}".workflows WHERE id LIKE '%:' || $1`,
    [tickIso],
  );
  await rt.stop(5_000);
  const late = rows.map((r) => new Date(r.created).getTime() - (minute + jitterOffset(r.name, r.id.split(':')[1], JITTER_MS))).sort((a, b) => a - b);
  const inWindow = rows.filter((r) => new Date(r.created).getTime() <= deadline).length;
  const pct = (p: number) => (late.length ? late[Math.min(late.length - 1, Math.floor((p / 100) * late.length))] : Number.NaN);
  const last = Math.max(...rows.map((r) => new Date(r.created).getTime())) - minute;
  console.log(`\nschedules: ${expected.toLocaleString('en-US')} schedules on "* * * * *" with jitter ${JITTER_MS / 1000}s, one leader, Postgres`);
  console.log(`  deploy (validate and register ${WORKFLOWS} definitions of ${PER_WORKFLOW} schedules)  ${(deployMs / 1000).toFixed(1)} s`);
  console.log(
    `  tick ${tickIso}: ${rows.length.toLocaleString('en-US')} started, ${inWindow.toLocaleString('en-US')} within the window + 2 s (${(last / 1000).toFixed(1)} s after the minute for the last)`,
  );
  console.log(`  start after its own jittered time: p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${pct(100)} ms`);
  console.log(`  longest lock wait seen (sampled every 20 ms): ${maxLockWaitMs.toFixed(0)} ms${longestWaiter ? ` (${longestWaiter})` : ''}`);
  if (said.length > 0) console.log(`  the runtime warned ${said.length} time(s), first: ${said[0]}`);
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await db.close();
  await admin.close();
}
