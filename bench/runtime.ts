import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, makeWorkerUtils, run as runGraphile } from 'graphile-worker';
import type pg from 'pg';
import { compile } from '../src/compiler/instantiate.js';
import { validate } from '../src/compiler/validate.js';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import type { Handlers } from '../src/runtime/worker/handlers.js';
import { BENCH_APP, benchUrl, type Cost, costWindow, openMonitor } from './cost.js';
import { benchLargeOutput } from './large-output.js';
import { size } from './size.js';
import { emitToStart } from './waits.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const N = size('BENCH_TASKS', 20_000, 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const SCHEMA = 'braid_bench';
/** The fan-out's width. */
const FAN = 1000;

const DEFS = {
  many: 'name: many\ninputs: { type: object, properties: { items: { type: array } }, required: [items] }\ntasks:\n  t: { kind: noop, for_each: "${{ inputs.items }}" }\n',
  one: 'name: one\ntasks:\n  t: { kind: noop }\n',
  fan:
    'name: fan\ninputs: { type: object, properties: { items: { type: array } }, required: [items] }\ntasks:\n  root: { kind: ' +
    'noop }\n  leaf: { kind: noop, deps: [root], for_each: "${{ inputs.items }}" }\n  join: { kind: noop, deps: [leaf] }\n',
  flowed:
    'name: flowed\ninputs: { type: object, properties: { items: { type: array } }, required: [items] }\ntasks:\n  t: { kind: noop, for_each: "${{ inputs.items }}", ' +
    'concurrency: { key: item.tenant, limit: 50 } }\n',
  chain: `name: chain\ntasks:\n${Array.from({ length: 200 }, (_, i) => `  c${i}: { kind: hop${i > 0 ? `, deps: [c${i - 1}]` : ''} }\n`).join('')}`,
};

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Every throughput window starts from the same state: the queued rows analysed and the previous run's dirty
 * pages written out (a checkpoint), so neither engine pays for the other's leftovers during its window.
 */
async function settle(db: { query: (sql: string) => Promise<unknown> }, table: string): Promise<void> {
  await db.query(`VACUUM ANALYZE ${table}`);
  await db.query('CHECKPOINT').catch(() => undefined);
}

/** braid's counterpart of graphile-worker's batched preset: a local queue of 500 prefetched tasks. */
const PREFETCH = 500;

async function freshBraid(handlers: Handlers = {}, prefetch = 0): Promise<{ rt: Runtime; close: () => Promise<void> }> {
  const db = createPostgres({ connectionString: url, max: 20, applicationName: BENCH_APP });
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const rt = createRuntime({
    database: db,
    schema: SCHEMA,
    handlers,
    queues: { default: CONCURRENCY },
    prefetch,
    pollIntervalMs: 1000,
    limits: { forEachItems: Math.max(N, FAN) },
  });
  await rt.migrate();
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-defs-'));
  for (const [name, yaml] of Object.entries(DEFS)) writeFileSync(join(dir, `${name}.yaml`), yaml);
  const registered = await rt.registerDefinitions(dir);
  // a bench definition that stops validating is said here, not as an unknown workflow later
  if (registered.validation.errors > 0)
    throw new Error(`bench definitions do not validate: ${registered.validation.diagnostics.map((d) => d.message).join('; ')}`);
  return {
    rt,
    close: async () => {
      await rt.stop(5000);
      await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
      await db.close();
    },
  };
}

/** Polls (on the monitor, every 20 ms) until `sql` says nothing is left: an EXISTS, so a poll reads one row. */
async function untilNoneLeft(monitor: pg.Client, sql: string, params: unknown[] = []): Promise<void> {
  for (;;) {
    const { rows } = await monitor.query<{ left: boolean }>(`SELECT EXISTS (${sql}) AS left`, params);
    if (!rows[0].left) return;
    await sleep(20);
  }
}

/** Tasks already inserted; from worker start to the last completion committed. */
async function braidOneWorkflow(monitor: pg.Client, prefetch: number, analyzedEmpty = false): Promise<Cost> {
  return timedOneWorkflow(
    monitor,
    'many',
    Array.from({ length: N }, (_, i) => i),
    prefetch,
    analyzedEmpty,
  );
}

/** The same, each task under `concurrency: { key: item.tenant, limit: 50 }` over 10 tenants (claimed through flow_pick). */
async function braidOneWorkflowFlowControlled(monitor: pg.Client): Promise<Cost> {
  return timedOneWorkflow(
    monitor,
    'flowed',
    Array.from({ length: N }, (_, i) => ({ tenant: `t${i % 10}` })),
    0,
  );
}

/**
 * One workflow of definition `name` over `items`, inserted first; from worker start to its last completion committed.
 * `analyzedEmpty`: `workflows` analyzed while it holds no row first, as autovacuum leaves a young deployment (the
 * statistics then say one row: a plan made on them must not go quadratic in a batch).
 */
async function timedOneWorkflow(monitor: pg.Client, name: string, items: unknown[], prefetch: number, analyzedEmpty = false): Promise<Cost> {
  const { rt, close } = await freshBraid({ noop: async () => null }, prefetch);
  if (analyzedEmpty) await rt.db.query(`ANALYZE ${SCHEMA}.workflows`);
  const id = await rt.start(name, { items });
  await settle(rt.db, `${SCHEMA}.tasks`);
  const window = await costWindow(monitor);
  await rt.startWorker();
  await untilNoneLeft(monitor, `SELECT 1 FROM ${SCHEMA}.workflows WHERE id = $1 AND state = 'running'`, [id]);
  const cost = await window.end();
  await close();
  return cost;
}

async function braidManyWorkflows(monitor: pg.Client, prefetch: number): Promise<Cost> {
  const { rt, close } = await freshBraid({ noop: async () => null }, prefetch);
  const def = validate([{ path: 'one.yaml', content: DEFS.one }]).definitions[0];
  const base = compile(def, {}, { id: 'x', now: new Date() });
  for (let i = 0; i < N; i += 500) {
    await rt.db.transaction(async (tx) => {
      for (let j = i; j < Math.min(N, i + 500); j++) await rt.insert({ ...base, workflow: { ...base.workflow, id: `w${String(j).padStart(6, '0')}` } }, { tx });
    });
  }
  await settle(rt.db, `${SCHEMA}.tasks`);
  const window = await costWindow(monitor);
  await rt.startWorker();
  await untilNoneLeft(monitor, `SELECT 1 FROM ${SCHEMA}.workflows WHERE state = 'running'`);
  const cost = await window.end();
  await close();
  return cost;
}

/** Rows a bulk start call carries, for both engines. */
const START_BATCH = 2000;

/** Starting N one-task workflows with startMany, in calls of START_BATCH. */
async function braidStartMany(monitor: pg.Client): Promise<Cost> {
  const { rt, close } = await freshBraid();
  const window = await costWindow(monitor);
  for (let i = 0; i < N; i += START_BATCH)
    await rt.startMany(
      'one',
      Array.from({ length: Math.min(START_BATCH, N - i) }, () => ({})),
    );
  const cost = await window.end();
  await close();
  return cost;
}

/** graphile-worker's addJobs of N jobs, in calls of START_BATCH. */
async function graphileAddJobs(monitor: pg.Client): Promise<Cost> {
  await monitor.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  const utils = await makeWorkerUtils({ connectionString: benchUrl(url), logger: quiet });
  await utils.migrate();
  const window = await costWindow(monitor);
  for (let i = 0; i < N; i += START_BATCH)
    await utils.addJobs(Array.from({ length: Math.min(START_BATCH, N - i) }, () => ({ identifier: 'noop', payload: {} })));
  const cost = await window.end();
  await utils.release();
  await monitor.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  return cost;
}

async function braidFanOut(): Promise<number> {
  const { rt, close } = await freshBraid({ noop: async () => null });
  await rt.startWorker();
  const t0 = performance.now();
  const id = await rt.start('fan', { items: Array.from({ length: FAN }, (_, i) => i) });
  await rt.workflow(id).waitUntilFinal({ pollMs: 20 });
  const ms = performance.now() - t0;
  await close();
  return ms;
}

async function braidChainHops(): Promise<number[]> {
  const starts = new Map<number, number>();
  const ends = new Map<number, number>();
  const handlers: Handlers = {};
  for (let i = 0; i < 200; i++) {
    handlers.hop = async (_args, ctx) => {
      const n = Number(ctx.taskName.slice(1));
      starts.set(n, performance.now());
      ends.set(n, performance.now());
      return null;
    };
  }
  const { rt, close } = await freshBraid(handlers);
  await rt.startWorker();
  const id = await rt.start('chain');
  await rt.workflow(id).waitUntilFinal({ pollMs: 20 });
  await close();
  return Array.from({ length: 199 }, (_, i) => starts.get(i + 1)! - ends.get(i)!);
}

const quiet = new Logger(() => () => undefined);

const BATCHED = { localQueue: { size: 500, refetchDelay: { durationMs: 10 } }, completeJobBatchDelay: 0, failJobBatchDelay: 0 };

async function graphileThroughput(monitor: pg.Client, batched: boolean): Promise<Cost> {
  await monitor.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  const migrate = await makeWorkerUtils({ connectionString: url, logger: quiet });
  await migrate.migrate();
  for (let i = 0; i < N; i += 2000) {
    await migrate.addJobs(Array.from({ length: Math.min(2000, N - i) }, () => ({ identifier: 'noop', payload: {} })));
  }
  await migrate.release();
  await settle(monitor, 'graphile_worker._private_jobs');
  const window = await costWindow(monitor);
  const runner = await runGraphile({
    preset: { worker: { connectionString: benchUrl(url), concurrentJobs: CONCURRENCY, pollInterval: 1000, ...(batched ? BATCHED : {}) } },
    noHandleSignals: true,
    logger: quiet,
    taskList: { noop: async () => undefined },
  });
  await untilNoneLeft(monitor, 'SELECT 1 FROM graphile_worker._private_jobs');
  const cost = await window.end();
  await runner.stop();
  // its dead rows would be vacuumed during the next engine's window
  await monitor.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  return cost;
}

async function graphileLatency(): Promise<number[]> {
  const db = createPostgres({ connectionString: url, max: 2 });
  await db.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  await db.close();
  const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
  await utils.migrate();
  let started: (() => void) | undefined;
  const runner = await runGraphile({
    preset: { worker: { connectionString: url, concurrentJobs: CONCURRENCY, pollInterval: 1000 } },
    noHandleSignals: true,
    logger: quiet,
    taskList: { ping: async () => started?.() },
  });
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    const ran = new Promise<void>((r) => (started = r));
    await utils.addJob('ping', {});
    await ran;
    samples.push(performance.now() - t0);
  }
  await runner.stop();
  await utils.release();
  const after = createPostgres({ connectionString: url, max: 1 });
  await after.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  await after.close();
  return samples;
}

/**
 * Throughput rounds: this machine's speed drifts by more than the differences measured, so every case runs this
 * many times, interleaved, and the median counts.
 */
const ROUNDS = size('BENCH_ROUNDS', 3, 1);
/** Latency samples per measure. */
const SAMPLES = size('BENCH_SAMPLES', 200, 10);

interface Case {
  label: string;
  run: (monitor: pg.Client) => Promise<Cost>;
  /** The case it is compared with, and the goals of that comparison (as the product states them). */
  vs?: { key: string; speedGoal?: string; cpuGoal?: string };
}

interface Measured {
  rate: number;
  rates: number[];
  clientUs: number;
  serverUs: number | null;
  trips: number | null;
}

function median(values: number[]): number {
  return pct(values, 50);
}

function summarise(costs: Cost[]): Measured {
  const rates = costs.map((c) => (N / c.ms) * 1000);
  const servers = costs.map((c) => c.serverUs);
  const trips = costs.map((c) => c.roundTrips);
  return {
    rate: median(rates),
    rates,
    clientUs: median(costs.map((c) => c.clientUs / N)),
    serverUs: servers.every((v) => v !== null) ? median(servers.map((v) => v! / N)) : null,
    trips: trips.every((v) => v !== null) ? median(trips.map((v) => v! / N)) : null,
  };
}

const cpuOf = (m: Measured) => (m.serverUs === null ? null : m.clientUs + m.serverUs);

export async function benchRuntime(): Promise<void> {
  console.log(`\nruntime: Postgres at ${url.replace(/:[^:@/]*@/, ':***@')}, ${N} no-op tasks, concurrency ${CONCURRENCY} for braid and graphile-worker`);
  console.log(`  throughput: median of ${ROUNDS} interleaved rounds (the range in brackets); CPU per task: this process (client) and`);
  console.log('  the Postgres backends that served the engine (server; n/a when the server is not on this machine)');
  const cases: Record<string, Case> = {
    gDefault: { label: 'graphile-worker 0.17.3, default', run: (m) => graphileThroughput(m, false) },
    gBatched: { label: 'graphile-worker 0.17.3, batched preset', run: (m) => graphileThroughput(m, true) },
    one: { label: `braid, one workflow of ${N} tasks, default`, run: (m) => braidOneWorkflow(m, 0), vs: { key: 'gDefault' } },
    oneBatched: {
      label: `braid, one workflow of ${N} tasks, prefetch ${PREFETCH}`,
      run: (m) => braidOneWorkflow(m, PREFETCH),
      vs: { key: 'gBatched', speedGoal: '>= 1.5x', cpuGoal: '<= 0.67x' },
    },
    analyzedEmpty: {
      label: 'braid, the same, workflows analyzed while empty',
      run: (m) => braidOneWorkflow(m, PREFETCH, true),
      vs: { key: 'oneBatched', cpuGoal: 'within 0.8x-1.2x' },
    },
    flowed: {
      label: 'braid, the same, concurrency 50 per tenant x 10, default',
      run: (m) => braidOneWorkflowFlowControlled(m),
      vs: { key: 'one', speedGoal: '>= 0.8x' },
    },
    many: { label: `braid, ${N} one-task workflows, default`, run: (m) => braidManyWorkflows(m, 0), vs: { key: 'gDefault' } },
    gAddJobs: { label: `graphile-worker addJobs, ${N} jobs in calls of ${START_BATCH}`, run: (m) => graphileAddJobs(m) },
    startMany: {
      label: `braid startMany, ${N} one-task workflows in calls of ${START_BATCH}`,
      run: (m) => braidStartMany(m),
      vs: { key: 'gAddJobs', speedGoal: '>= 1.0x', cpuGoal: '<= 1.5x' },
    },
    manyBatched: {
      label: `braid, ${N} one-task workflows, prefetch ${PREFETCH}`,
      run: (m) => braidManyWorkflows(m, PREFETCH),
      vs: { key: 'gBatched', speedGoal: '>= 1.0x', cpuGoal: '<= 1.0x' },
    },
  };
  // BENCH_CASES=one,gBatched runs only those
  const only = process.env.BENCH_CASES?.split(',');
  const keys = Object.keys(cases).filter((k) => !only || only.includes(k));
  const costs = Object.fromEntries(keys.map((k) => [k, [] as Cost[]]));
  const monitor = await openMonitor(url);
  for (let r = 0; r < ROUNDS; r++) for (const k of keys) costs[k].push(await cases[k].run(monitor));
  const measured = Object.fromEntries(keys.map((k) => [k, summarise(costs[k])]));
  console.log(`  ${'case'.padEnd(58)} ${'tasks/s'.padStart(7)} ${'[range]'.padEnd(15)} ${'CPU µs/task (client+server)'.padEnd(28)} round trips/task`);
  for (const k of keys) {
    const m = measured[k];
    const range = ROUNDS > 1 ? `[${Math.min(...m.rates).toFixed(0)}-${Math.max(...m.rates).toFixed(0)}]` : '';
    const cpu = cpuOf(m);
    const cpuText = cpu === null ? `n/a (${m.clientUs.toFixed(1)}+n/a)` : `${cpu.toFixed(1)} (${m.clientUs.toFixed(1)}+${m.serverUs!.toFixed(1)})`;
    console.log(
      `  ${cases[k].label.padEnd(58)} ${m.rate.toFixed(0).padStart(7)} ${range.padEnd(15)} ${cpuText.padEnd(28)} ${m.trips === null ? 'n/a' : m.trips.toFixed(3)}`,
    );
  }
  console.log('  ratios in this run:');
  for (const k of keys) {
    const vs = cases[k].vs;
    if (!vs || !measured[vs.key]) continue;
    const m = measured[k];
    const base = measured[vs.key];
    const cpu = cpuOf(m);
    const baseCpu = cpuOf(base);
    const cpuRatio = cpu === null || baseCpu === null ? 'n/a' : `${(cpu / baseCpu).toFixed(2)}x`;
    const goal = (g?: string) => (g ? ` (goal ${g})` : '');
    const cpuPart = vs.key === 'one' ? '' : `, CPU per task ${cpuRatio}${goal(vs.cpuGoal)}`;
    console.log(`    ${cases[k].label}: tasks/s ${(m.rate / base.rate).toFixed(2)}x${goal(vs.speedGoal)}${cpuPart} of ${cases[vs.key].label}`);
  }
  await monitor.end();
  benchLargeOutput();
  const fan = await braidFanOut();
  console.log(`  braid, fan-out 1 -> 1000 -> 1      ${fan.toFixed(0).padStart(7)} ms wall`);
  const hops = await braidChainHops();
  const g = await graphileLatency();
  const signal = await emitToStart(SAMPLES);
  console.log(`  braid, chain of 200: hop (dep done -> dependent starts) p50 ${pct(hops, 50).toFixed(2)} ms, p95 ${pct(hops, 95).toFixed(2)} ms`);
  console.log(`  braid, signal emit -> handler start                    p50 ${pct(signal, 50).toFixed(2)} ms, p95 ${pct(signal, 95).toFixed(2)} ms`);
  console.log(`  graphile-worker add -> start, default                  p50 ${pct(g, 50).toFixed(2)} ms, p95 ${pct(g, 95).toFixed(2)} ms`);
  console.log(`  ratio hop p50 / graphile add -> start p50: ${(pct(hops, 50) / pct(g, 50)).toFixed(2)}x (goal <= 0.5x)`);
  console.log(`  ratio signal emit -> start p50 / graphile add -> start p50: ${(pct(signal, 50) / pct(g, 50)).toFixed(2)}x (goal <= 1.0x)`);
}
