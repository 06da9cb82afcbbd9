import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { Database } from '../../src/runtime/db/types.js';
import { repoRoot } from './cli.js';
import { postgresUrl } from './runtime.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

export interface RuntimeProcess {
  child: ChildProcess;
  output: () => string;
}

/** A runtime in a process of its own (test/helpers/runtime-process.ts), killed after the file if still alive. */
export function runtimeProcess(config: Record<string, unknown>): RuntimeProcess {
  let out = '';
  const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/helpers/runtime-process.ts')], {
    cwd: repoRoot,
    env: { ...process.env, BRAID_PROC: JSON.stringify({ url: postgresUrl, ...config }) },
  });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push(child);
  return { child, output: () => out };
}

export const exited = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.on('exit', () => resolve())));

export const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** A table the runtime processes' handlers record each invocation in (workflow, task, attempt, pid, whether its deps had all completed, time). */
export async function invocationTable(db: Database): Promise<string> {
  const table = `invocations_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  await db.query(`CREATE TABLE ${table} (workflow_id text, task text, attempt int, pid int, deps_ok boolean, at timestamptz DEFAULT clock_timestamp())`);
  return table;
}
