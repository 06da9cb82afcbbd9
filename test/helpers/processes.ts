import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Database } from '../../src/runtime/db/types.js';
import { braidBin, repoRoot } from './cli.js';
import { afterEachFile } from './file-end.js';
import { patient } from './patience.js';
import { postgresUrl, scratchTable, until } from './runtime.js';

export interface RuntimeProcess {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr as they came. */
  output: () => string;
}

const children: ChildProcess[] = [];
// gone, not only signalled, before the file's schemas are emptied for the next file
afterEachFile(async () => {
  const alive = children.splice(0).filter((c) => c.exitCode === null && c.signalCode === null);
  for (const c of alive) c.kill('SIGKILL');
  await Promise.all(alive.map(exited));
});

/**
 * `braid worker` as a user runs it, on the fault suite's handlers (test/fixtures/faults/handlers.mjs: each
 * invocation recorded in `table`, straight to the database), its output collected; killed after the file.
 */
export function faultsWorker(url: string, schema: string, table: string, args: string[]): RuntimeProcess {
  let out = '';
  const handlers = join(repoRoot, 'test/fixtures/faults/handlers.mjs');
  const child = spawn(process.execPath, [braidBin, 'worker', '--handlers', handlers, '--database', url, '--schema', schema, ...args], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: '', NO_COLOR: '1', BRAID_DIRECT_URL: postgresUrl, BRAID_TABLE: table },
  });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push(child);
  return { child, output: () => out };
}

/** A runtime in a process of its own (test/helpers/runtime-process.ts, as built), killed after the file if still alive. */
export function runtimeProcess(config: Record<string, unknown>): RuntimeProcess {
  let out = '';
  const child = spawn(process.execPath, [join(repoRoot, 'dist/test/helpers/runtime-process.js')], {
    cwd: repoRoot,
    env: { ...process.env, BRAID_PROC: JSON.stringify({ url: postgresUrl, ...config }) },
  });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push(child);
  return { child, output: () => out };
}

/**
 * Resolves once a process has printed text matching `pattern` (its readiness line, say), checked as its output
 * arrives rather than polled; rejects with what it printed when it exits first or prints nothing of the kind
 * within `timeoutMs`. `from`: only what it printed after that much output counts (mark() before the action).
 */
export function printed(proc: RuntimeProcess, pattern: RegExp | string, timeoutMs = 60_000, from = 0): Promise<void> {
  const seen = () => {
    const out = proc.output().slice(from);
    return typeof pattern === 'string' ? out.includes(pattern) : pattern.test(out);
  };
  const { child } = proc;
  return new Promise((resolve, reject) => {
    if (seen()) return resolve();
    const fail = (why: string) => {
      done();
      reject(new Error(`the process ${why} before printing ${pattern}; it printed:\n${proc.output()}`));
    };
    if (!alive(child))
      return reject(new Error(`the process had exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}; it printed:\n${proc.output()}`));
    const check = () => {
      if (!seen()) return;
      done();
      resolve();
    };
    const exit = () => fail(`exited (${child.exitCode ?? child.signalCode})`);
    const timer = setTimeout(() => fail(`went on for ${patient(timeoutMs)} ms`), patient(timeoutMs));
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', exit);
    };
    // after the listeners that collect the output, so a chunk is in output() when it is checked
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.on('exit', exit);
  });
}

/** Where a process's output stands now: printed(proc, pattern, timeout, mark(proc)) waits for what comes after. */
export const mark = (proc: RuntimeProcess) => proc.output().length;

export const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.on('exit', () => resolve())));

export const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** A table the runtime processes' handlers record each invocation in (workflow, task, attempt, pid, whether its deps had all completed, time). */
export function invocationTable(db: Database): Promise<string> {
  return scratchTable(db, 'workflow_id text, task text, attempt int, pid int, deps_ok boolean, at timestamptz DEFAULT clock_timestamp()');
}

/**
 * What every fault must leave intact: each workflow completed, no attempt ran twice (one invocation per
 * task attempt of a task that was not skipped), and no task ran before all its deps had completed.
 */
export async function expectIntact(db: Database, schema: string, table: string, ids: string[]): Promise<void> {
  const { rows: states } = await db.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM "${schema}".workflows WHERE id = ANY($1::text[]) GROUP BY state`,
    [ids],
  );
  expect(states).toEqual([{ state: 'completed', n: ids.length }]);
  const { rows: doubled } = await db.query(`SELECT workflow_id, task, attempt, count(*)::int AS n FROM ${table} GROUP BY 1, 2, 3 HAVING count(*) > 1`);
  expect(doubled).toEqual([]);
  const { rows: early } = await db.query(`SELECT workflow_id, task, attempt FROM ${table} WHERE NOT deps_ok`);
  expect(early).toEqual([]);
  const { rows: missing } = await db.query(
    `SELECT t.workflow_id, t.name FROM "${schema}".tasks t WHERE t.workflow_id = ANY($1::text[]) AND t.state <> 'skipped'
        AND NOT EXISTS (SELECT 1 FROM ${table} i WHERE i.workflow_id = t.workflow_id AND i.task = t.name AND i.attempt = t.attempt)`,
    [ids],
  );
  expect(missing).toEqual([]);
}

export async function allFinal(db: Database, schema: string, ids: string[], timeoutMs: number): Promise<void> {
  await until(
    async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".workflows WHERE id = ANY($1::text[]) AND state = 'running'`, [
        ids,
      ]);
      return rows[0].n === 0;
    },
    timeoutMs,
    200,
  );
}

/** `braid worker` started in a project folder as its user would; ready once it says what it runs. */
export function projectWorker(
  cwd: string,
  env: NodeJS.ProcessEnv,
): { ready: Promise<void>; stop: () => Promise<void>; child: ChildProcess; proc: RuntimeProcess } {
  let log = '';
  const child = spawn(process.execPath, [braidBin, 'worker'], { cwd, env: { ...process.env, NO_COLOR: '1', ...env } });
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const gone = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const proc = { child, output: () => log };
  return {
    child,
    proc,
    ready: printed(proc, / running \d+ kind\(s\)/),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await gone;
    },
  };
}
