/**
 * Runs one workflow test on the real runtime: start, then its steps, then on to the end with time skipping,
 * checking each expectation against what the run did. The clock moves only when nothing can run at the
 * current virtual time: then it jumps to the next timer, deadline, scheduled task or sleeping mock.
 */

import type { Queryable } from '../runtime/db/types.js';
import { anyAvailable, currentDefinition, deployTestSchedules, maintenanceDue, recordEnded } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import type { TaskRecord } from '../runtime/sql/workflows.js';
import { scheduledTick } from '../runtime/wire/index.js';
import { workflowTree } from './checks.js';
import { compare, type FailedTask, type Mismatch, type Observed, type ObservedRun, type ObservedTask } from './expect.js';
import { unhandled } from './mocks.js';
import type { TestSession } from './session.js';
import type { TestCase, TestFile } from './test-file.js';
import type { VirtualClock } from './virtual-clock.js';

export interface Failure {
  /** Which expectation: a step's (its index), or the final one. */
  step: number | 'final' | 'run';
  line: number;
  /** The virtual time when it was checked. */
  time: string;
  mismatches: Mismatch[];
  /** A failure that is not a mismatch (the run itself broke). */
  message?: string;
  /** The tasks that had failed by then, with their last error. */
  failed?: FailedTask[];
}

export interface TestResult {
  file: string;
  workflow: string;
  name: string;
  index: number;
  line: number;
  passed: boolean;
  failures: Failure[];
  ms: number;
  /** What the run ended as (for --update and --coverage). */
  observed?: Observed;
  /** Every workflow of the run (children too) with its tasks, for coverage. */
  runs?: { name: string; tasks: TaskRecord[] }[];
}

/** How long one test may take in real time by default (`braid test --timeout`). */
export const DEFAULT_TEST_TIMEOUT_MS = 60_000;

/** A test that ran past its real-time bound: it fails naming where it was. */
class TestTimeout extends Error {
  override name = 'TestTimeout';
}

export async function runTest(session: TestSession, file: TestFile, test: TestCase, options: { timeoutMs?: number } = {}): Promise<TestResult> {
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? DEFAULT_TEST_TIMEOUT_MS;
  const result: TestResult = {
    file: file.path,
    workflow: file.workflow,
    name: test.name,
    index: test.index,
    line: test.line,
    passed: false,
    failures: [],
    ms: 0,
  };
  const { rt, clock, started: starts } = await session.runtime(file.workflow, test.mocks, file.now, session.handlers, file.queues);
  const flowControlled = workflowTree(file.workflow, session.definitions).some((d) => d.concurrency || d.debounce || d.tasks.some((t) => t.flow));
  const end = file.now.getTime() + file.maxTimeMs;
  const driver = new Driver(rt, clock, session, started + timeoutMs);
  // where the run is, for a timeout's message: its start, the step playing, or the run to the end after them
  let at: { step: number | 'run'; line: number; where: string } = { step: 'run', line: test.line, where: 'at its start' };
  try {
    await prepare(session, file, test, clock.now());
    await rt.startWorker();
    // a fixed id: the run's jittered backoffs and children's ids, and so its virtual times, repeat
    const id = test.inputs !== undefined ? await rt.start(file.workflow, test.inputs, { id: `test-${test.index + 1}` }) : undefined;
    const own = () => {
      if (id === undefined) throw new Error("this step needs the test's own run: give the test inputs");
      return rt.workflow(id);
    };
    await driver.settle();
    for (const [i, step] of test.steps.entries()) {
      at = { step: i, line: step.line, where: `at step ${i + 1} (line ${step.line})` };
      const mismatches = await playStep(step, { rt, driver, clock, own, observe: () => observe(rt, id, clock, { starts, flowControlled }) });
      if (mismatches?.seen && mismatches.list.length > 0)
        result.failures.push({ step: i, line: step.line, time: clock.now().toISOString(), mismatches: mismatches.list, failed: mismatches.seen.failed });
    }
    // then on to the end: time skips to whatever comes next, until the workflow is final or max_time passed
    at = { step: 'run', line: test.line, where: 'running on after its steps' };
    if (id !== undefined) await driver.runToEnd(id, end);
    else {
      // only the schedules started runs: no tick after the steps starts, and the runs started go on to their end
      for (const s of await rt.schedules.list(file.workflow, { next: 0, runs: 0 })) await rt.schedules.pause(file.workflow, s.name);
      for (const w of (await rt.listWorkflows({ state: 'running', limit: 500 })).workflows) await driver.runToEnd(w.id, end);
    }
    const observed = await observe(rt, id, clock, { starts, flowControlled });
    result.observed = observed;
    result.runs = await runsOf(rt);
    if (test.expect) {
      const mismatches = compare(test.expect, observed);
      if (mismatches.length > 0)
        result.failures.push({ step: 'final', line: test.expectLine ?? test.line, time: observed.time, mismatches, failed: observed.failed });
    }
  } catch (error) {
    const message =
      error instanceof TestTimeout
        ? `the test ran past its timeout of ${timeoutMs / 1000} s (--timeout) ${at.where}`
        : ((error as Error).message ?? String(error));
    result.failures.push({ step: at.step, line: at.line, time: clock.now().toISOString(), mismatches: [], message });
  } finally {
    await rt.stop(0);
  }
  result.passed = result.failures.length === 0;
  result.ms = Date.now() - started;
  return result;
}

/** What a test gives before its run starts: every kind handled, the workflows it says ended, its schedules. */
async function prepare(session: TestSession, file: TestFile, test: TestCase, now: Date): Promise<void> {
  const missing = unhandled(workflowTree(file.workflow, session.definitions), file.workflow, test.mocks, session.handlers);
  if (missing.length > 0)
    throw new Error(`no mock and no handler for ${missing.join(', ')}: mock it (by task or "kind:NAME"), or give the project's handlers (--handlers)`);
  for (const w of test.workflows) {
    const def = await currentDefinition(session.db, session.s, w.name);
    if (!def) throw new Error(`workflows: no workflow named "${w.name}" is defined (for ${w.id})`);
    await recordEnded(session.db, session.s, { id: w.id, name: w.name, hash: def.hash, state: w.state, output: w.output, at: now });
  }
  if (test.schedules) await deployTestSchedules(session.db, session.s, file.workflow, test.schedules, now);
}

/** Plays one step; an expect step returns what it saw and how that differs from what it expects. */
async function playStep(
  step: TestCase['steps'][number],
  c: { rt: Runtime; driver: Driver; clock: VirtualClock; own: () => ReturnType<Runtime['workflow']>; observe: () => Promise<Observed> },
): Promise<{ seen: Observed; list: Mismatch[] } | undefined> {
  switch (step.kind) {
    case 'advance':
      await c.driver.advanceTo(c.clock.now().getTime() + step.ms);
      break;
    case 'signal':
      await c.own().signals.emit(step.key, step.payload, { idempotencyKey: step.idempotency_key, source: step.source });
      await c.driver.settle();
      break;
    case 'emit':
      await c.rt.emit(step.event, step.payload, { id: step.id });
      await c.driver.settle();
      break;
    case 'callback':
      await answerLink(c.rt, c.own().id, step);
      await c.driver.settle();
      break;
    case 'cancel':
      await c.own().cancel();
      await c.driver.settle();
      break;
    case 'pause':
    case 'resume':
      await c.rt.pauses[step.kind](step.scope, step.target, { actor: 'braid test' });
      await c.driver.settle();
      break;
    case 'retry':
      await c.own().retry({ mode: step.mode });
      await c.driver.settle();
      break;
    case 'expect': {
      const seen = await c.observe();
      return { seen, list: compare(step.expect, seen) };
    }
  }
  return undefined;
}

/** Moves a test's run along: lets the worker drain, runs maintenance, moves the clock. */
export class Driver {
  constructor(
    private readonly rt: Runtime,
    private readonly clock: VirtualClock,
    /** Where the runtime's tables are (a test session, or any runtime's database and quoted schema). */
    private readonly session: { db: Queryable; s: string },
    /** Date.now() past which the test stops (its --timeout); a library test has none but each settle's bound. */
    private readonly deadline = Infinity,
  ) {}

  /** The earliest of the runtime's next due time and the first sleeping mock's wake-up. */
  nextTime(due: Date | null): number | null {
    const times = [due, this.clock.nextWake()].filter((d): d is Date => d !== null).map((d) => d.getTime());
    return times.length === 0 ? null : Math.max(Math.min(...times), this.clock.now().getTime());
  }

  /** Runs on, the clock jumping to whatever comes next, until the workflow is final or the clock would pass `end`. */
  async runToEnd(id: string, end: number): Promise<void> {
    await this.settle();
    while ((await this.rt.workflow(id).load()).state === 'running') {
      if (Date.now() > this.deadline) throw new TestTimeout();
      const next = this.nextTime(await this.rt.nextDue());
      if (next === null || next > end) break;
      await this.advanceTo(next);
    }
  }

  /** Moves the clock to `target`, stopping at everything due on the way, in order. */
  async advanceTo(target: number): Promise<void> {
    await this.settle();
    for (;;) {
      const next = this.nextTime(await this.rt.nextDue());
      if (next === null || next > target) break;
      // a due time that maintenance cannot act on at once must not hold the clock still
      this.clock.set(new Date(next === this.clock.now().getTime() ? next + 1 : next));
      await this.settle();
    }
    this.clock.set(new Date(target));
    await this.settle();
  }

  /** Runs everything runnable at the current virtual time: handlers, completions, maintenance, until all is quiet. */
  async settle(): Promise<void> {
    let idleRounds = 0;
    const stuckAt = Date.now() + DEFAULT_TEST_TIMEOUT_MS;
    for (;;) {
      if (Date.now() > this.deadline) throw new TestTimeout();
      if (Date.now() > stuckAt) throw new Error(`the run did not settle within ${DEFAULT_TEST_TIMEOUT_MS / 1000} s of real time`);
      await new Promise((r) => setImmediate(r));
      if (this.rt.workInHand() > this.clock.sleeping) {
        idleRounds = 0;
        await new Promise((r) => setTimeout(r, 1));
        continue;
      }
      const available = await anyAvailable(this.session.db, this.session.s, this.clock.now());
      // what moves a run along (nothing crashes in a test, so there is nothing to rescue or sweep), when due
      let changed = false;
      if (await maintenanceDue(this.session.db, this.session.s, this.clock.now())) {
        const counts = await this.rt.maintenance({ only: ['timers', 'timed_out', 'grouped', 'effects', 'scheduled', 'promoted'] });
        changed = Object.values(counts).some((n) => n > 0);
      }
      if (!changed && !available && this.rt.workInHand() <= this.clock.sleeping) return;
      if (available) {
        this.rt.pollWorker();
        // every slot is held by a handler asleep on the clock: only moving the clock frees one
        if (this.clock.sleeping > 0 && ++idleRounds > 20) return;
        // an available task nothing takes (a kind without a handler) would hold the run forever
        if (++idleRounds > 2000) throw new Error('a task is available, but no handler of this test runs it');
        await new Promise((r) => setTimeout(r, 1));
      } else idleRounds = 0;
    }
  }
}

/** The run in the terms expectations use (none when the test started none: only its schedules did), and the schedules' runs. */
export async function observe(
  rt: Runtime,
  id: string | undefined,
  clock: VirtualClock,
  s: { starts: readonly string[]; flowControlled: boolean } = { starts: [], flowControlled: false },
): Promise<Observed> {
  const runs = await scheduledRuns(rt);
  const started = { started: [...s.starts], flowControlled: s.flowControlled, triggered: await triggeredRuns(rt) };
  if (id === undefined) return { state: 'none', reason: null, output: null, tasks: {}, time: clock.now().toISOString(), runs, failed: [], ...started };
  const w = await rt.workflow(id).load();
  const tasks = await rt.workflow(id).tasks();
  const logs = await handlerLines(rt, id);
  return {
    state: w.state,
    reason: w.end_reason ?? null,
    output: w.output ?? null,
    tasks: Object.fromEntries(tasks.map((t) => [t.name, observeTask(t, logs.get(t.name) ?? [])])),
    time: clock.now().toISOString(),
    runs,
    failed: tasks
      .filter((t) => t.state === 'discarded' || t.state === 'cancelled')
      .map((t) => ({ task: t.name, state: t.state, attempts: t.attempt, error: t.errors.at(-1)?.message ?? null })),
    ...started,
  };
}

/** A callback step: the recipient's link of the term (the term's one link without a recipient), answered with the body. */
async function answerLink(rt: Runtime, id: string, step: Extract<TestCase['steps'][number], { kind: 'callback' }>): Promise<void> {
  const links = await rt.callbacks.links(id, step.task, step.term);
  const link = step.recipient === undefined ? links[0] : links.find((l) => l.recipient === step.recipient);
  if (!link)
    throw new Error(`callback: term "${step.term}" of task "${step.task}" has no link for "${step.recipient}" (${links.map((l) => l.recipient).join(', ')})`);
  await rt.callbacks.receive(link.token, step.body);
}

/** The runs the test's events started, in the order they started, each with its state now. */
async function triggeredRuns(rt: Runtime): Promise<Observed['triggered']> {
  const out: Observed['triggered'] = [];
  for (const e of (await rt.events.list({ limit: 500 })).reverse())
    for (const o of e.outcomes) if (o.outcome === 'started') out.push({ workflow: o.workflow, id: o.id, state: (await rt.workflow(o.id).load()).state });
  return out;
}

/** Every run a schedule started, oldest tick first: its schedule, nominal tick (UTC, from its key) and state. */
async function scheduledRuns(rt: Runtime): Promise<ObservedRun[]> {
  const out: ObservedRun[] = [];
  let cursor: string | undefined;
  do {
    const page = await rt.listWorkflows({ limit: 500, cursor });
    for (const summary of page.workflows) {
      const w = await rt.workflow(summary.id).load();
      if (w.schedule === null) continue;
      out.push({ schedule: w.schedule, time: new Date(scheduledTick(w)!).toISOString(), state: w.state });
    }
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out.sort((a, b) => a.time.localeCompare(b.time) || a.schedule.localeCompare(b.schedule));
}

function observeTask(t: TaskRecord, logs: { level: string; message: string }[]): ObservedTask {
  const terms = t.wait?.evidence?.terms ?? t.wait?.last_evaluation?.terms ?? [];
  return {
    state: t.state,
    attempts: t.attempt,
    args: t.args,
    output: t.output,
    wait: Object.fromEntries(terms.map((term) => [term.name, term.value === true])),
    logs,
  };
}

/** The lines the workflow's handlers wrote, by task, in order (braid's own lines left out). */
async function handlerLines(rt: Runtime, id: string): Promise<Map<string, { level: string; message: string }[]>> {
  const byTask = new Map<string, { level: string; message: string }[]>();
  let after: string | undefined;
  for (;;) {
    const page = await rt.workflow(id).logs({ after, limit: 5000 });
    for (const l of page.lines) if (l.source === 'handler') byTask.set(l.task, [...(byTask.get(l.task) ?? []), { level: l.level, message: l.message }]);
    if (!page.has_more) return byTask;
    after = page.next_after ?? undefined;
  }
}

async function runsOf(rt: Runtime): Promise<{ name: string; tasks: TaskRecord[] }[]> {
  const out: { name: string; tasks: TaskRecord[] }[] = [];
  let cursor: string | undefined;
  do {
    const page = await rt.listWorkflows({ limit: 500, cursor });
    for (const w of page.workflows) out.push({ name: w.name, tasks: await rt.workflow(w.id).tasks() });
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return out;
}
