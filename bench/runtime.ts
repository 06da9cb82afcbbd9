import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, makeWorkerUtils, run as runGraphile } from 'graphile-worker';
import { compile } from '../src/compiler/instantiate.js';
import { validate } from '../src/compiler/validate.js';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import type { Handlers } from '../src/runtime/worker/handlers.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const N = Number(process.env.BENCH_TASKS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const SCHEMA = 'braid_bench';

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
  const db = createPostgres({ connectionString: url, max: 20 });
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const rt = createRuntime({
    database: db,
    schema: SCHEMA,
    handlers,
    queues: { default: CONCURRENCY },
    prefetch,
    pollIntervalMs: 1000,
    limits: { forEachItems: N },
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

async function openWorkflows(rt: Runtime): Promise<number> {
  const { rows } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${SCHEMA}.workflows WHERE state = 'running'`);
  return rows[0].n;
}

/** Tasks already inserted; from worker start to the last completion committed. */
async function braidOneWorkflow(prefetch: number): Promise<number> {
  return timedOneWorkflow(
    'many',
    Array.from({ length: N }, (_, i) => i),
    prefetch,
  );
}

/** The same, each task under `concurrency: { key: item.tenant, limit: 50 }` over 10 tenants (claimed through flow_pick). */
async function braidOneWorkflowFlowControlled(): Promise<number> {
  return timedOneWorkflow(
    'flowed',
    Array.from({ length: N }, (_, i) => ({ tenant: `t${i % 10}` })),
    0,
  );
}

/** One workflow of definition `name` over `items`, inserted first; from worker start to its last completion committed. */
async function timedOneWorkflow(name: string, items: unknown[], prefetch: number): Promise<number> {
  const { rt, close } = await freshBraid({ noop: async () => null }, prefetch);
  const id = await rt.start(name, { items });
  await settle(rt.db, `${SCHEMA}.tasks`);
  const t0 = performance.now();
  await rt.startWorker();
  await rt.workflow(id).waitUntilFinal({ pollMs: 20 });
  const ms = performance.now() - t0;
  await close();
  return ms;
}

async function braidManyWorkflows(prefetch: number): Promise<number> {
  const { rt, close } = await freshBraid({ noop: async () => null }, prefetch);
  const def = validate([{ path: 'one.yaml', content: DEFS.one }]).definitions[0];
  const base = compile(def, {}, { id: 'x', now: new Date() });
  for (let i = 0; i < N; i += 500) {
    await rt.db.transaction(async (tx) => {
      for (let j = i; j < Math.min(N, i + 500); j++) await rt.insert({ ...base, workflow: { ...base.workflow, id: `w${String(j).padStart(6, '0')}` } }, { tx });
    });
  }
  await settle(rt.db, `${SCHEMA}.tasks`);
  const t0 = performance.now();
  await rt.startWorker();
  while ((await openWorkflows(rt)) > 0) await sleep(20);
  const ms = performance.now() - t0;
  await close();
  return ms;
}

async function braidFanOut(): Promise<number> {
  const { rt, close } = await freshBraid({ noop: async () => null });
  await rt.startWorker();
  const t0 = performance.now();
  const id = await rt.start('fan', { items: Array.from({ length: 1000 }, (_, i) => i) });
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

async function graphileThroughput(batched: boolean): Promise<number> {
  const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
  await utils.release();
  const db = createPostgres({ connectionString: url, max: 2 });
  await db.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  const migrate = await makeWorkerUtils({ connectionString: url, logger: quiet });
  await migrate.migrate();
  for (let i = 0; i < N; i += 2000) {
    await migrate.addJobs(Array.from({ length: Math.min(2000, N - i) }, () => ({ identifier: 'noop', payload: {} })));
  }
  await migrate.release();
  await settle(db, 'graphile_worker._private_jobs');
  const t0 = performance.now();
  const runner = await runGraphile({
    preset: { worker: { connectionString: url, concurrentJobs: CONCURRENCY, pollInterval: 1000, ...(batched ? BATCHED : {}) } },
    noHandleSignals: true,
    logger: quiet,
    taskList: { noop: async () => undefined },
  });
  // the cheapest check that all jobs are done (a count would scan what is left every poll)
  for (;;) {
    const { rows } = await db.query<{ left: boolean }>('SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS left');
    if (!rows[0].left) break;
    await sleep(20);
  }
  const ms = performance.now() - t0;
  await runner.stop();
  // its dead rows would be vacuumed during the next engine's window
  await db.query('DROP SCHEMA IF EXISTS graphile_worker CASCADE');
  await db.close();
  return ms;
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
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    const ran = new Promise<void>((r) => (started = r));
    await utils.addJob('ping', {});
    await ran;
    samples.push(performance.now() - t0);
  }
  await runner.stop();
  await utils.release();
  return samples;
}

/**
 * Throughput rounds: this machine's speed drifts by more than the differences measured, so every case runs this
 * many times, interleaved, and the median counts.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export async function benchRuntime(): Promise<void> {
  console.log(`\nruntime: Postgres at ${url.replace(/:[^:@/]*@/, ':***@')}, ${N} no-op tasks, concurrency ${CONCURRENCY} for braid and graphile-worker`);
  console.log(`  throughput: median of ${ROUNDS} interleaved rounds (the range in brackets)`);
  const cases = {
    gDefault: () => graphileThroughput(false),
    gBatched: () => graphileThroughput(true),
    one: () => braidOneWorkflow(0),
    oneBatched: () => braidOneWorkflow(PREFETCH),
    flowed: () => braidOneWorkflowFlowControlled(),
    many: () => braidManyWorkflows(0),
    manyBatched: () => braidManyWorkflows(PREFETCH),
  };
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, [] as number[]])) as Record<keyof typeof cases, number[]>;
  // BENCH_CASES=one,flowed runs only those (the others print as 0)
  const only = process.env.BENCH_CASES?.split(',');
  for (let r = 0; r < ROUNDS; r++)
    for (const [k, run] of Object.entries(cases)) samples[k as keyof typeof cases].push(only && !only.includes(k) ? 0 : rate(await run()));
  const [gDefault, gBatched, one, oneBatched, flowed, many, manyBatched] = Object.values(samples).map((v) => pct(v, 50));
  const range = (k: keyof typeof cases) => (ROUNDS > 1 ? ` [${Math.min(...samples[k]).toFixed(0)}-${Math.max(...samples[k]).toFixed(0)}]` : '');
  const row = (k: keyof typeof cases, label: string, value: number, unit: string, note = '') =>
    console.log(`  ${label.padEnd(52)} ${value.toFixed(0).padStart(7)} ${unit}${range(k).padEnd(16)}${note}`);
  row('gDefault', 'graphile-worker 0.17.3, default', gDefault, 'jobs/s');
  row('gBatched', 'graphile-worker 0.17.3, batched preset', gBatched, 'jobs/s');
  row('one', `braid, one workflow of ${N} tasks, default`, one, 'tasks/s', `${(one / gDefault).toFixed(2)}x graphile default`);
  row(
    'oneBatched',
    `braid, one workflow of ${N} tasks, prefetch ${PREFETCH}`,
    oneBatched,
    'tasks/s',
    `${(oneBatched / gBatched).toFixed(2)}x graphile batched (goal >= 1.0)`,
  );
  row('flowed', `braid, the same with concurrency 50 per tenant x 10`, flowed, 'tasks/s', `${(flowed / one).toFixed(2)}x braid uncontrolled (goal >= 0.70)`);
  row('many', `braid, ${N} one-task workflows, default`, many, 'tasks/s', `${(many / gDefault).toFixed(2)}x graphile default`);
  row(
    'manyBatched',
    `braid, ${N} one-task workflows, prefetch ${PREFETCH}`,
    manyBatched,
    'tasks/s',
    `${(manyBatched / gBatched).toFixed(2)}x graphile batched (goal >= 0.5)`,
  );
  const fan = await braidFanOut();
  console.log(`  braid, fan-out 1 -> 1000 -> 1      ${fan.toFixed(0).padStart(7)} ms wall`);
  const hops = await braidChainHops();
  const g = await graphileLatency();
  console.log(
    `  braid, chain of 200: hop (dep done -> dependent starts) p50 ${pct(hops, 50).toFixed(2)} ms, p95 ${pct(hops, 95).toFixed(2)} ms (goal p50 <= 2 ms)`,
  );
  console.log(`  graphile-worker add -> start latency                 p50 ${pct(g, 50).toFixed(2)} ms, p95 ${pct(g, 95).toFixed(2)} ms`);
  console.log(`  ratio hop p50 / graphile p50: ${(pct(hops, 50) / pct(g, 50)).toFixed(2)}x`);
}

function rate(ms: number): number {
  return (N / ms) * 1000;
}
