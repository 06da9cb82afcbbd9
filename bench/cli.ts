import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgres } from '../src/runtime/db/postgres.js';
import { size } from './size.js';

const url = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';
const ROUNDS = size('BENCH_ROUNDS', 7, 1);

/** A definition whose wait never resolves (it counts 100,000 signals), so every signal is stored and judged. */
const WAITING = 'name: cli_bench\ntasks:\n  w:\n    kind: k\n    wait: { terms: { go: { signal: go, count: 100000 } } }\n';

/**
 * How long the commands people run in a shell loop take, Node's start-up included: each loads only what it
 * needs (issue 24's goals: --version and --help under 150 ms, validate of one file under 400 ms, status and
 * signal on Postgres under 300 ms). Medians of ROUNDS runs, beside bare `node -e 0`.
 */
export async function benchCli(repoRoot: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'braid-bench-cli-'));
  const schema = `bench_cli_${process.pid}`;
  try {
    writeFileSync(join(dir, 'braid.config.yaml'), `definitions: [flows]\nschema: ${schema}\n`);
    const flows = join(dir, 'flows');
    mkdirSync(flows);
    writeFileSync(join(flows, 'cli_bench.yaml'), WAITING);
    const env = { ...process.env, DATABASE_URL: url, NO_COLOR: '1' };
    const braid = (args: string[]) => {
      const r = spawnSync(process.execPath, [join(repoRoot, 'bin/braid.js'), ...args], { cwd: dir, env, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`braid ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
      return r.stdout;
    };
    const median = (run: () => unknown) => {
      const ms: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const t = performance.now();
        run();
        ms.push(performance.now() - t);
      }
      return ms.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
    };
    braid(['migrate', '--schema', schema]);
    braid(['register']);
    const id = braid(['start', 'cli_bench']).trim().split(/\s+/)[0];
    const rows: [string, number, number][] = [
      ['braid --version', median(() => braid(['--version'])), 150],
      ['braid --help', median(() => braid(['--help'])), 150],
      ['braid validate (one file)', median(() => braid(['validate', join(repoRoot, 'definitions/expense_approval.yaml')])), 400],
      ['braid status ID (Postgres)', median(() => braid(['status', id])), 300],
      ['braid signal ID KEY (Postgres)', median(() => braid(['signal', id, 'go', '--payload', '{"n":1}'])), 300],
    ];
    const node = median(() => spawnSync(process.execPath, ['-e', '0']));
    console.log(`cli: start-up of everyday commands, median of ${ROUNDS} (bare node -e 0: ${node.toFixed(0)} ms)`);
    for (const [what, ms, goal] of rows) console.log(`  ${what.padEnd(32)} ${ms.toFixed(0).padStart(6)} ms   (goal < ${goal} ms)`);
    console.log('');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    const db = createPostgres({ connectionString: url, max: 1 });
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await db.close();
  }
}
