import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { size } from './size.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const MB = size('BENCH_LARGE_OUTPUT_MB', 50, 5);

/**
 * One worker process passes an output of MB megabytes to a dependent (ctx.deps): its peak RSS over its RSS
 * before, and the time from start to the workflow's end. In a process of its own, so the peak is this case's.
 */
export function benchLargeOutput(): void {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child'], { encoding: 'utf8', env: process.env });
  if (child.status !== 0) throw new Error(`the large-output case failed: ${child.stderr.slice(0, 2000)}`);
  const r = JSON.parse(child.stdout.trim().split('\n').pop()!) as { before: number; peak: number; ms: number };
  const grown = r.peak - r.before;
  console.log(
    `  braid, a ${MB} MB output passed to a dependent: ${r.ms.toFixed(0)} ms, worker RSS ${r.before.toFixed(0)} MB before, peak ${r.peak.toFixed(0)} MB ` +
      `(+${grown.toFixed(0)} MB, ${(grown / MB).toFixed(1)}x the output; goal < 4x)`,
  );
}

async function child(): Promise<void> {
  const schema = 'braid_bench_large';
  const db = createPostgres({ connectionString: url, max: 4 });
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  let length = 0;
  const rt = createRuntime({
    database: db,
    schema,
    handlers: {
      make: async () => ({ blob: 'x'.repeat(MB * 1024 * 1024) }),
      use: async (_args, ctx) => {
        length = (ctx.deps.make as { blob: string }).blob.length;
        return null;
      },
    },
  });
  await rt.migrate();
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-large-'));
  writeFileSync(join(dir, 'large.yaml'), 'name: large\ntasks:\n  make: { kind: make, max_output: 64MiB }\n  use: { kind: use, deps: [make] }\n');
  await rt.registerDefinitions(dir);
  const before = process.memoryUsage().rss / 1048576;
  const t0 = performance.now();
  await rt.startWorker();
  const id = await rt.start('large');
  const w = await rt.workflow(id).waitUntilFinal({ timeoutMs: 300_000, pollMs: 20 });
  const ms = performance.now() - t0;
  if (w.state !== 'completed' || length !== MB * 1024 * 1024) throw new Error(`the output did not pass unchanged (${w.state}, ${length} characters)`);
  await rt.stop(5000);
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.close();
  console.log(JSON.stringify({ before, peak: process.resourceUsage().maxRSS / 1024, ms }));
}

if (process.argv[2] === '--child') await child();
