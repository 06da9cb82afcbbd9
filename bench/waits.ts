import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile } from '../src/compiler/instantiate.js';
import { validate } from '../src/compiler/validate.js';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import type { Handlers } from '../src/runtime/worker/handlers.js';
import { size } from './size.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const SCHEMA = 'braid_bench_waits';
const SAMPLES = size('BENCH_SAMPLES', 200, 10);
const OTHERS = size('BENCH_WAITING_OTHERS', 10_000, 200);

const DEFS = {
  approve: 'name: approve\ntasks:\n  go:\n    kind: go\n    wait: { terms: { ok: { signal: approve } } }\n',
  tally: 'name: tally\ntasks:\n  go:\n    kind: go\n    wait: { terms: { votes: { signal: vote, where: "payload.yes == true", count: 100000 } } }\n',
  timer: 'name: timer\ntasks:\n  go:\n    kind: go\n    wait: { terms: { t: { timer: { after_wait_started: 1s } } } }\n',
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function fresh(handlers: Handlers): Promise<{ rt: Runtime; close: () => Promise<void> }> {
  const db = createPostgres({ connectionString: url, max: 10 });
  await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const rt = createRuntime({ database: db, schema: SCHEMA, handlers, queues: { default: 32 } });
  await rt.migrate();
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-waits-'));
  for (const [name, yaml] of Object.entries(DEFS)) writeFileSync(join(dir, `${name}.yaml`), yaml);
  await rt.registerDefinitions(dir);
  return {
    rt,
    close: async () => {
      await rt.stop(5000);
      // the bench leaves nothing behind in the database it measured on
      await db.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
      await db.close();
    },
  };
}

/** Emit -> handler start: the wait resolves in the emitting transaction, the worker is woken on commit. */
export async function emitToStart(samples = SAMPLES): Promise<number[]> {
  let started: ((at: number) => void) | undefined;
  const { rt, close } = await fresh({ go: async () => started?.(performance.now()) });
  await rt.startWorker();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = await rt.start('approve');
    const ran = new Promise<number>((r) => (started = r));
    const t0 = performance.now();
    await rt.workflow(id).signals.emit('approve', {});
    times.push((await ran) - t0);
  }
  await close();
  return times;
}

/** The emit call alone, into a workflow whose quorum it never completes, with `others` workflows also waiting. */
async function emitCost(others: number): Promise<number[]> {
  const { rt, close } = await fresh({ go: async () => null });
  const def = validate([{ path: 'tally.yaml', content: DEFS.tally }]).definitions[0];
  const base = compile(def.normalized, {}, { id: 'x', now: new Date() });
  base.workflow.definition.hash = def.hash;
  for (let i = 0; i < others; i += 500) {
    await rt.db.transaction(async (tx) => {
      for (let j = i; j < Math.min(others, i + 500); j++)
        await rt.insert({ ...base, workflow: { ...base.workflow, id: `other${String(j).padStart(6, '0')}` } }, { tx });
    });
  }
  await rt.db.query(`ANALYZE ${SCHEMA}.tasks`);
  const id = await rt.start('tally');
  const samples: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    await rt.workflow(id).signals.emit('vote', { yes: true });
    samples.push(performance.now() - t0);
  }
  await close();
  return samples;
}

/** Timer lateness: handler start minus the timer's fire time, at the default 1 s poll interval. */
async function timerLateness(): Promise<number[]> {
  const starts = new Map<string, number>();
  const { rt, close } = await fresh({
    go: async (_a, ctx) => {
      starts.set(ctx.workflowId, Date.now());
      return null;
    },
  });
  await rt.startWorker();
  while (!rt.isLeader) await sleep(20);
  const ids: string[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    ids.push(await rt.start('timer'));
    await sleep(Math.random() * 20);
  }
  while (starts.size < ids.length) await sleep(50);
  const late: number[] = [];
  for (const id of ids) {
    const fireAt = (await rt.workflow(id).task('go')).wait!.evidence!.inputs.timers.t.fire_at!;
    late.push(starts.get(id)! - new Date(fireAt).getTime());
  }
  await close();
  return late;
}

export async function benchWaits(): Promise<void> {
  console.log(`\nwaits: Postgres, ${SAMPLES} samples each`);
  const hop = await emitToStart();
  console.log(`  signal emit -> handler start           p50 ${pct(hop, 50).toFixed(2)} ms, p95 ${pct(hop, 95).toFixed(2)} ms (goal p50 <= 3 ms)`);
  const alone = await emitCost(0);
  const crowded = await emitCost(OTHERS);
  console.log(`  emit, no other workflow waiting        p50 ${pct(alone, 50).toFixed(2)} ms, p95 ${pct(alone, 95).toFixed(2)} ms`);
  console.log(
    `  emit, ${OTHERS.toLocaleString('en-US')} other workflows waiting   p50 ${pct(crowded, 50).toFixed(2)} ms, p95 ${pct(crowded, 95).toFixed(2)} ms ` +
      `(ratio ${(pct(crowded, 50) / pct(alone, 50)).toFixed(2)}x: flat is ~1)`,
  );
  const late = await timerLateness();
  console.log(`  timer lateness (poll interval 1000 ms) p50 ${pct(late, 50).toFixed(0)} ms, p99 ${pct(late, 99).toFixed(0)} ms (goal p99 <= 1100 ms)`);
}
