/**
 * A braid runtime in a process of its own, for the multi-process tests: its handlers record every
 * invocation in a table, so tests can count how often each task ran. Configured by BRAID_PROC (JSON).
 */
import { createPostgres } from '../../src/runtime/db/postgres.js';
import { consoleLogger } from '../../src/runtime/log.js';
import { createRuntime } from '../../src/runtime/runtime.js';

interface Config {
  url: string;
  schema: string;
  table: string;
  sleepMs?: number;
  concurrency?: number;
  workerDeadAfterMs?: number;
  leaderLeaseMs?: number;
}

const config = JSON.parse(process.env.BRAID_PROC ?? '{}') as Config;
const db = createPostgres({ connectionString: config.url, max: 8 });
const record = async (workflowId: string, task: string, attempt: number) =>
  db.query(`INSERT INTO ${config.table} (workflow_id, task, attempt, pid) VALUES ($1, $2, $3, $4)`, [workflowId, task, attempt, process.pid]);

const rt = createRuntime({
  database: db,
  schema: config.schema,
  queues: { default: config.concurrency ?? 10 },
  pollIntervalMs: 100,
  heartbeatIntervalMs: 100,
  leaderLeaseMs: config.leaderLeaseMs ?? 1000,
  workerDeadAfterMs: config.workerDeadAfterMs ?? 30_000,
  logger: consoleLogger((line) => process.stdout.write(`[${process.pid}] ${line}\n`)),
  handlers: {
    work: async (_args, ctx) => {
      await record(ctx.workflowId, ctx.taskName, ctx.attempt);
      const ms = config.sleepMs ?? Math.random() * 5;
      await new Promise((r) => setTimeout(r, ms));
      return { pid: process.pid };
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
