/**
 * The worker conformance runner (conformance/README.md): plays a scenario of conformance/scenarios/ against a
 * worker under test, started through its adapter (a command line), with braid's leader in this process, and
 * checks what the database holds at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { repoRoot } from '../helpers/cli.js';
import { patient } from '../helpers/patience.js';
import { exited } from '../helpers/processes.js';
import { postgresUrl, testRuntime, until } from '../helpers/runtime.js';

export interface Adapter {
  name: string;
  /** The worker's command line; `{dsn}` and `{schema}` are filled in. */
  command: string[];
  env?: Record<string, string>;
  /** What the worker prints once it runs with its stop signals handled: the runner signals it only after. */
  ready: RegExp;
}

interface TaskExpectation {
  state?: string;
  attempt?: number;
  output?: unknown;
  errors?: Record<string, unknown>[];
  /** Substrings of braid's own log lines of the task, each in some line. */
  logs?: string[];
  /** The handler's log lines, exactly and in order. */
  handler_logs?: string[];
  /** Each failed attempt ended within this many ms of its start (a check that must not backtrack, say). */
  attempt_ms_below?: number;
}

type Step =
  | { start: { workflow: string; id: string; inputs?: unknown } }
  | { await: { workflow: string } }
  | { spawn: Record<string, never> }
  | { signal_worker: { worker: number; signal: NodeJS.Signals; when_running?: { workflow: string; task: string } } }
  | { await_rescue: { workflow: string; task: string } }
  | { await_exit: { worker: number; code: number } }
  | { await_task: { workflow: string; task: string; state: string } }
  | { expect_task: { workflow: string; task: string; state: string } }
  | { emit: { workflow: string; key: string; payload?: unknown } }
  | { cancel: { workflow: string; when_running?: { workflow: string; task: string } } };

export interface Scenario {
  name: string;
  description: string;
  definitions: Record<string, string>;
  steps: Step[];
  expect: Record<string, { state: string; tasks?: Record<string, TaskExpectation>; task_count?: number; all_tasks?: TaskExpectation; task_rows?: number }>;
}

export function scenarios(): Scenario[] {
  const dir = join(repoRoot, 'conformance/scenarios');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Scenario);
}

interface Worker {
  child: ChildProcess;
  output: () => string;
}

/** Long enough for any scenario's step on a busy machine; a step waits for its condition, never for this. */
const STEP_BOUND_MS = 60_000;

export async function runScenario(scenario: Scenario, adapter: Adapter): Promise<void> {
  const rt = await testRuntime({ definitions: scenario.definitions, leader: true, workerDeadAfterMs: 2000, heartbeatIntervalMs: 200, pollIntervalMs: 100 });
  await rt.startWorker();
  const workers: Worker[] = [];
  const s = `"${rt.schema}"`;
  const task = async (workflow: string, name: string) =>
    (
      await rt.db.query<{ state: string; attempt: number; errors: { kind?: string }[] }>(
        `SELECT state, attempt, errors FROM ${s}.tasks WHERE workflow_id = $1 AND name = $2`,
        [workflow, name],
      )
    ).rows[0];
  const spawnWorker = async () => {
    const w = startWorker(adapter, rt.schema);
    workers.push(w);
    await until(
      async () => {
        if (w.child.exitCode !== null) throw new Error(`the worker exited (${w.child.exitCode}) before it registered:\n${w.output()}`);
        if (!adapter.ready.test(w.output())) return false;
        return (await rt.db.query(`SELECT 1 FROM ${s}.workers WHERE pid = $1 AND stopped_at IS NULL`, [w.child.pid])).rows.length > 0;
      },
      STEP_BOUND_MS,
      50,
    );
  };
  try {
    await spawnWorker();
    for (const step of scenario.steps) await play(rt, step, { workers, task, spawnWorker });
    await check(rt, scenario, s);
  } catch (error) {
    throw new Error(
      `${scenario.name} on ${adapter.name}: ${(error as Error).message}\n--- worker output ---\n${workers.map((w) => w.output()).join('\n---\n')}`,
    );
  } finally {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => exited(w.child)));
  }
}

function startWorker(adapter: Adapter, schema: string): Worker {
  const fill = (a: string) => a.replaceAll('{dsn}', postgresUrl).replaceAll('{schema}', schema);
  const child = spawn(fill(adapter.command[0]), adapter.command.slice(1).map(fill), {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: '', NO_COLOR: '1', ...adapter.env },
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

async function play(
  rt: Runtime,
  step: Step,
  c: {
    workers: Worker[];
    task: (w: string, n: string) => Promise<{ state: string; attempt: number; errors: { kind?: string }[] }>;
    spawnWorker: () => Promise<void>;
  },
): Promise<void> {
  if ('start' in step) await rt.start(step.start.workflow, step.start.inputs ?? {}, { id: step.start.id });
  else if ('await' in step) await rt.workflow(step.await.workflow).waitUntilFinal({ timeoutMs: STEP_BOUND_MS, pollMs: 50 });
  else if ('spawn' in step) await c.spawnWorker();
  else if ('signal_worker' in step) {
    const { worker, signal, when_running: when } = step.signal_worker;
    if (when) await until(async () => (await c.task(when.workflow, when.task))?.state === 'running', STEP_BOUND_MS, 20);
    c.workers[worker].child.kill(signal);
  } else if ('await_rescue' in step) {
    const { workflow, task } = step.await_rescue;
    await until(async () => ((await c.task(workflow, task))?.errors ?? []).some((e) => e.kind === 'lost'), STEP_BOUND_MS, 50);
  } else if ('await_exit' in step) {
    const w = c.workers[step.await_exit.worker];
    // bounded like every step: a worker that does not exit is said (with its output, by runScenario), not waited on
    let bound: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, fail) => {
      bound = setTimeout(() => fail(new Error(`worker ${step.await_exit.worker} did not exit within ${STEP_BOUND_MS} ms`)), STEP_BOUND_MS);
    });
    await Promise.race([exited(w.child), late]).finally(() => clearTimeout(bound));
    expect(w.child.exitCode, 'the worker exit code').toBe(step.await_exit.code);
  } else if ('await_task' in step) {
    const { workflow, task, state } = step.await_task;
    await until(async () => (await c.task(workflow, task))?.state === state, STEP_BOUND_MS, 50);
  } else if ('expect_task' in step) expect((await c.task(step.expect_task.workflow, step.expect_task.task)).state).toBe(step.expect_task.state);
  else if ('emit' in step) await rt.workflow(step.emit.workflow).signals.emit(step.emit.key, step.emit.payload ?? null);
  else {
    const when = step.cancel.when_running;
    if (when) await until(async () => (await c.task(when.workflow, when.task))?.state === 'running', STEP_BOUND_MS, 20);
    await rt.workflow(step.cancel.workflow).cancel();
  }
}

async function check(rt: Runtime, scenario: Scenario, s: string): Promise<void> {
  for (const [id, want] of Object.entries(scenario.expect)) {
    const w = await rt.workflow(id).waitUntilFinal({ timeoutMs: STEP_BOUND_MS, pollMs: 50 });
    expect(w.state, `workflow ${id}`).toBe(want.state);
    const tasks = await rt.workflow(id).tasks();
    if (want.task_count !== undefined) expect(tasks.length).toBe(want.task_count);
    for (const t of tasks) if (want.all_tasks) expect(t, `task ${t.name}`).toMatchObject(want.all_tasks);
    if (want.task_rows !== undefined) {
      // items of a for_each range have no row of their own until something gives them one (a worker's completion by key does)
      const { rows } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.tasks WHERE workflow_id = $1`, [id]);
      expect(rows[0].n, `workflow ${id}'s task rows`).toBe(want.task_rows);
    }
    const logs = (await rt.workflow(id).logs({ limit: 1000 })).lines;
    for (const [name, e] of Object.entries(want.tasks ?? {})) {
      const t = tasks.find((x) => x.name === name);
      expect(t, `task ${name}`).toBeDefined();
      const { logs: braidLines, handler_logs: handlerLines, errors, attempt_ms_below: below, ...fields } = e;
      expect(t, `task ${name} is ${JSON.stringify(t)}`).toMatchObject(fields);
      if (errors) {
        expect(t!.errors.length, `task ${name}'s errors: ${JSON.stringify(t!.errors)}`).toBe(errors.length);
        for (const [i, x] of errors.entries()) expect(t!.errors[i], `task ${name}'s error ${i}`).toMatchObject(x);
      }
      // a bound on an idle machine, stretched by how busy this one is (a backtracking engine takes minutes, not seconds)
      if (below !== undefined)
        for (const x of t!.errors) {
          const ms = new Date(x.at).getTime() - new Date(x.started_at ?? x.at).getTime();
          expect(ms, `task ${name}'s attempt ${x.attempt} took ${ms} ms`).toBeLessThan(patient(below));
        }
      const mine = logs.filter((l) => l.task === name);
      for (const text of braidLines ?? [])
        expect(
          mine.filter((l) => l.source === 'braid').some((l) => l.message.includes(text)),
          `a braid log line with "${text}"`,
        ).toBe(true);
      if (handlerLines) expect(mine.filter((l) => l.source === 'handler').map((l) => l.message)).toEqual(handlerLines);
    }
  }
  // nothing left behind: no running task, no claim, no effect
  const { rows } = await rt.db.query<{ running: number; effects: number }>(
    `SELECT (SELECT count(*)::int FROM ${s}.tasks WHERE state = 'running') AS running, (SELECT count(*)::int FROM ${s}.effects) AS effects`,
  );
  expect(rows[0]).toEqual({ running: 0, effects: 0 });
}
