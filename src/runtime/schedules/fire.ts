import { jitterOffset, tickRunId } from '../../compiler/schedule/ticks.js';
import { advancing, workflowWrite } from '../core/context.js';
import { describeError } from '../core/describe-error.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { type MaintenanceContext, stillLeading } from '../maintenance/service.js';
import { lockSchedule, recordTick, runningRuns, type ScheduleRow } from '../sql/schedules.js';
import { dueTick, overlapAction } from './decide.js';

/** What a call did: the run it started (0 or 1), and the ticks it passed over (fallen out of the catch-up window). */
export interface FireResult {
  started: number;
  missed: number;
}

/**
 * Handles a schedule's next due tick in a transaction of its own that locks the schedule's row (a second leader
 * skips it while it is held) and records what the tick did with the run it started: the leader takes one tick of
 * each due schedule a round, so none holds the others back. Runs that must be cancelled first (overlap
 * cancel_previous) are cancelled each in its own transaction, as every write on a workflow is, before the tick.
 */
export async function fireSchedule(ctx: MaintenanceContext, workflow: string, name: string): Promise<FireResult> {
  // a cancel_previous tick is two steps (cancel, then start): a bound, so a run that will not stop holds no pass
  for (let i = 0; i < 3; i++) {
    // not fenced by the lease (a share lock on it per tick would hold its renewal back behind thousands of ticks):
    // the schedule's row lock and the run's business key already make each tick start once, whoever leads
    if (!stillLeading(ctx)) break;
    const step = await advancing(ctx, (tx, advance) => tickOnce(tx, advance, workflow, name));
    if (step.kind === 'idle') break;
    if (step.kind !== 'cancel') return { started: step.kind === 'started' ? 1 : 0, missed: step.missed };
    const { cancelWorkflow } = await import('../engine/cancel.js');
    for (const id of step.ids) await workflowWrite(ctx, undefined, id, (tx, advance) => cancelWorkflow(tx, advance, id));
  }
  return { started: 0, missed: 0 };
}

type Step = { kind: 'idle' } | { kind: 'started'; missed: number } | { kind: 'handled'; missed: number } | { kind: 'cancel'; ids: string[] };

async function tickOnce(tx: Queryable, advance: AdvanceContext, workflow: string, name: string): Promise<Step> {
  const row = await lockSchedule(tx, advance.s, workflow, name);
  if (!row || row.paused) return { kind: 'idle' };
  const now = advance.now.getTime();
  const spec = row.spec;
  const running = spec.overlap === 'allow' ? [] : await runningRuns(tx, advance.s, workflow, name);
  const state = { lastTick: time(row.last_tick), nextTick: time(row.next_tick), buffered: time(row.buffered_tick) };
  const jitter = jitterOffset(workflow, name, spec.jitter_ms);
  // a buffered tick starts as soon as nothing of its schedule runs
  if (state.buffered !== null && running.length === 0) {
    const run = await startTick(tx, advance, row, state.buffered);
    await record(tx, advance, row, { ...state, buffered: null }, run, 0);
    return { kind: run.error ? 'handled' : 'started', missed: 0 };
  }
  const due = dueTick(spec, jitter, { since: row.since.getTime(), lastTick: state.lastTick, nextTick: state.nextTick }, now);
  if (due === undefined) return { kind: 'idle' };
  const { tick } = due;
  const action = overlapAction(spec.overlap, running.length, state.buffered !== null);
  if (action === 'cancel_previous') {
    const stopping = running.filter((r) => !r.cancel_requested).map((r) => r.id);
    if (stopping.length > 0) return { kind: 'cancel', ids: stopping };
  }
  const after = { lastTick: tick, nextTick: due.next ?? null, buffered: state.buffered };
  if (action === 'skip') {
    await record(tx, advance, row, after, { outcome: 'skipped' }, due.missed);
    return { kind: 'handled', missed: due.missed };
  }
  if (action === 'buffer') {
    await record(tx, advance, row, { ...after, buffered: tick }, { outcome: 'buffered' }, due.missed);
    return { kind: 'handled', missed: due.missed };
  }
  const run = await startTick(tx, advance, row, tick);
  await record(tx, advance, row, after, run, due.missed);
  return { kind: run.error ? 'handled' : 'started', missed: due.missed };
}

interface TickRun {
  outcome: string;
  runId?: string;
  error?: string;
}

/**
 * Starts a tick's run with its business key, from the workflow's current version. A run that cannot start
 * (its inputs no longer fit the inputs schema) is recorded as the tick's failure, and the schedule goes on.
 */
export async function startTick(
  tx: Queryable,
  advance: AdvanceContext,
  row: Pick<ScheduleRow, 'workflow_name' | 'name' | 'spec' | 'definition_hash'>,
  tick: number,
  id?: string,
): Promise<TickRun> {
  const runId = id ?? tickRunId(row.workflow_name, row.name, tick);
  // the version that deployed the schedule is the current one (a deploy replaces the rows): cached by hash
  const normalized = await advance.definitions.get(tx, row.workflow_name, row.definition_hash);
  const [{ tickInputs }, { startIn }] = await Promise.all([import('../../compiler/schedule/inputs.js'), import('../engine/start.js')]);
  try {
    // what refuses a tick (its inputs, a conflicting id, a value Postgres cannot store) is found before any write
    const def = { name: row.workflow_name, hash: row.definition_hash, normalized };
    const { existing } = await startIn(tx, advance, def, tickInputs(row.spec, tick), { id: runId, extras: { schedule: row.name } });
    return { outcome: existing ? 'existing' : 'started', runId };
  } catch (error) {
    // what is wrong with this tick is its failure; anything else (the database) fails the pass, tried again
    if (!TICK_PROBLEMS.has((error as Error)?.name)) throw error;
    return { outcome: 'failed', runId, error: describeError(error).message };
  }
}

/** The errors that refuse one tick's run for what it is: its inputs, a taken id, a value Postgres cannot store. */
const TICK_PROBLEMS = new Set(['CompileError', 'TemplateError', 'WorkflowConflictError', 'UnstorableValueError', 'RangeError']);

async function record(
  tx: Queryable,
  advance: AdvanceContext,
  row: ScheduleRow,
  state: { lastTick: number | null; nextTick: number | null; buffered: number | null },
  run: TickRun,
  /** Ticks passed over to reach this one: they never run. */
  missed: number,
): Promise<void> {
  const jitter = jitterOffset(row.workflow_name, row.name, row.spec.jitter_ms);
  await recordTick(tx, advance.s, row.workflow_name, row.name, {
    lastTick: date(state.lastTick),
    nextTick: date(state.nextTick),
    nextFireAt: date(state.nextTick === null ? null : state.nextTick + jitter),
    bufferedTick: date(state.buffered),
    runId: run.runId,
    outcome: run.outcome,
    error: run.error,
    // the tick that was recorded as the last: how long after its own fire time this pass reached it
    lagMs: state.lastTick === null ? 0 : advance.now.getTime() - (state.lastTick + jitter),
    missed,
    now: advance.now,
  });
}

const time = (d: Date | null): number | null => (d ? new Date(d).getTime() : null);
const date = (t: number | null): Date | null => (t === null ? null : new Date(t));
