/**
 * A braid runtime in a process of its own, for the multi-process tests: its handlers record every
 * invocation in a table, so tests can count how often each task ran. Configured by BRAID_PROC (JSON).
 */
import { createPostgres } from '../../src/runtime/db/postgres.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { consoleLogger } from '../../src/runtime/telemetry/log.js';
import { pidAlive } from './pid-alive.js';

interface Config {
  url: string;
  schema: string;
  table: string;
  /** Fixed handler time; by default 0-5 ms, or `sleepMinMs`-`sleepMaxMs` when given. */
  sleepMs?: number;
  sleepMinMs?: number;
  sleepMaxMs?: number;
  concurrency?: number;
  /** Keep the runtime's own recovery defaults (heartbeat, dead-after, leader lease) instead of the fast test ones. */
  defaultTimings?: boolean;
  workerDeadAfterMs?: number;
  leaderLeaseMs?: number;
  /** Handlers write a ctx.log line per attempt (off by default: each costs a statement at the attempt's end). */
  log?: boolean;
  /**
   * Where `limited` handlers say what they hold: a row per attempt (its tenant, pid, and how many attempts of the
   * tenant it saw in flight in live processes as it began), marked done as it ends.
   */
  holdingTable?: string;
  /** Claimed beyond the free slots (the runtime's prefetch). */
  prefetch?: number;
  /** `flaky` handlers fail this share of their attempts (0-1) at random, each recorded in `table` (which then has an `ok` column). */
  failRate?: number;
}

const config = JSON.parse(process.env.BRAID_PROC ?? '{}') as Config;
const db = createPostgres({ connectionString: config.url, max: 8, idleTimeoutMs: 1000 });
const record = async (workflowId: string, task: string, attempt: number, depsOk: boolean) =>
  db.query(`INSERT INTO ${config.table} (workflow_id, task, attempt, pid, deps_ok) VALUES ($1, $2, $3, $4, $5)`, [
    workflowId,
    task,
    attempt,
    process.pid,
    depsOk,
  ]);

const sleepMs = () => config.sleepMs ?? (config.sleepMinMs ?? 0) + Math.random() * ((config.sleepMaxMs ?? 5) - (config.sleepMinMs ?? 0));
const timings = config.defaultTimings
  ? {}
  : { heartbeatIntervalMs: 100, leaderLeaseMs: config.leaderLeaseMs ?? 1000, workerDeadAfterMs: config.workerDeadAfterMs ?? 30_000 };

const rt = createRuntime({
  database: db,
  schema: config.schema,
  queues: { default: config.concurrency ?? 10 },
  prefetch: config.prefetch ?? 0,
  pollIntervalMs: 100,
  ...timings,
  logger: consoleLogger((line) => process.stdout.write(`[${process.pid}] ${Date.now()} ${line}\n`)),
  handlers: {
    work: async (_args, ctx) => {
      // whether every dep had completed when this attempt started: out-of-order runs are caught without clocks
      const deps = ctx.deps && Object.keys(ctx.deps).length > 0 ? await ctx.loadDeps() : {};
      await record(
        ctx.workflowId,
        ctx.taskName,
        ctx.attempt,
        Object.values(deps).every((d) => d.state === 'completed'),
      );
      if (config.log) ctx.log.info('working', { pid: process.pid });
      await new Promise((r) => setTimeout(r, sleepMs()));
      return { pid: process.pid };
    },
    // each attempt recorded with whether it will fail (the table has an `ok` column), before it ends
    flaky: async (_args, ctx) => {
      const ok = Math.random() >= (config.failRate ?? 0);
      await db.query(`INSERT INTO ${config.table} (workflow_id, task, attempt, pid, ok) VALUES ($1, $2, $3, $4, $5)`, [
        ctx.workflowId,
        ctx.taskName,
        ctx.attempt,
        process.pid,
        ok,
      ]);
      if (!ok) throw new Error(`flaky: attempt ${ctx.attempt} fails`);
      await new Promise((r) => setTimeout(r, sleepMs()));
      return {};
    },
    limited: async (args, ctx) => {
      const tenant = (args as { tenant: string }).tenant;
      const key = [ctx.workflowId, ctx.taskName, ctx.attempt];
      await record(ctx.workflowId, ctx.taskName, ctx.attempt, true);
      await db.query(`INSERT INTO ${config.holdingTable} (tenant, pid, workflow_id, task, attempt) VALUES ($1, $2, $3, $4, $5)`, [tenant, process.pid, ...key]);
      const { rows } = await db.query<{ pid: number }>(`SELECT pid FROM ${config.holdingTable} WHERE tenant = $1 AND NOT done`, [tenant]);
      const seen = rows.filter((r) => r.pid === process.pid || pidAlive(r.pid)).length;
      await db.query(`UPDATE ${config.holdingTable} SET seen = $4 WHERE workflow_id = $1 AND task = $2 AND attempt = $3`, [...key, seen]);
      await new Promise((r) => setTimeout(r, sleepMs()));
      await db.query(`UPDATE ${config.holdingTable} SET done = true WHERE workflow_id = $1 AND task = $2 AND attempt = $3`, key);
      return {};
    },
  },
});

await rt.startWorker();
process.stdout.write(`[${process.pid}] ready ${rt.id}\n`);
const leaderWatch = setInterval(() => {
  if (rt.isLeader) process.stdout.write(`[${process.pid}] leading\n`);
}, 100);
process.once('SIGTERM', async () => {
  clearInterval(leaderWatch);
  await rt.stop(5000);
  await db.close();
  process.exit(0);
});
