import { describeOutputProblems, outputProblems } from '../../compiler/returns.js';
import { type ActorOptions, actorOf } from '../core/actor.js';
import { type RuntimeContext, workflowWrite } from '../core/context.js';
import { SensitiveKeysMissingError, sealPaths, sensitivePathsOf } from '../core/sensitive.js';
import { assertStorable } from '../core/storable.js';
import type { Queryable, TxOption } from '../db/types.js';
import { activateWaits, advanceWorkflow } from '../engine/advance.js';
import { completeAll } from '../engine/completion.js';
import type { AdvanceContext } from '../engine/context.js';
import { retryWorkflow, runAgainRows } from '../engine/retry.js';
import { TaskNotFoundError, WorkflowNotFoundError } from '../errors.js';
import { lockWorkflows } from '../sql/advance.js';
import { writeAudit } from '../sql/audit.js';
import { channels } from '../sql/channels.js';
import { workflowVersion } from '../sql/definitions.js';
import { resetTasks } from '../sql/retry.js';
import { type ActionTaskRow, actionTasks, notifyTaskCancel, reopenCounts, retryNow, skipOpenTask, takeOver } from '../sql/task-actions.js';
import { isFinal } from '../wire/index.js';
import { OperationInvalidError, OutputInvalidError } from './errors.js';
import { actionStep, reopenSelection, type TaskAction } from './task-decide.js';

export interface TaskActionOptions extends ActorOptions, TxOption {
  /** A running task: cancel its attempt first (without it, a running task is refused). */
  force?: boolean;
  /** Do it in a transaction that is rolled back: what it would do, with nothing changed (nor audited). */
  dryRun?: boolean;
}

/** What a dry run found the action would do: the tasks that would run, be skipped, or end failed after it. */
export interface TaskActionPreview {
  run: string[];
  skipped: string[];
  failed: string[];
  /** The workflow's state after it. */
  workflow_state: string;
}

/** What an action did: the task's state after it, the tasks it opened again, the attempt it cancelled. */
export interface TaskActionResult {
  workflow_id: string;
  task: string;
  action: TaskAction;
  state: string;
  reopened: string[];
  cancelled_attempt: number | null;
  /** A dry run's: what the action would do (nothing was changed). */
  preview?: TaskActionPreview;
}

/** Rolls a dry run's transaction back with what it found. */
class DryRunDone extends Error {
  override name = 'DryRunDone';
  constructor(readonly result: TaskActionResult) {
    super('dry run');
  }
}

const RUNS = new Set(['pending', 'scheduled', 'available', 'running', 'retryable']);
const FAILS = new Set(['cancelled', 'discarded']);

/** The largest output an operator gives by hand when the task declares no max_output (as a handler's default). */
const MAX_HAND_OUTPUT = 1024 * 1024;

/**
 * An operator's action on one task of a workflow (braid task retry|skip|complete), in one transaction under the
 * workflow's lock, with its audit line: retry opens a task that ended without completing again (with what it
 * ended downstream), or runs one waiting out its backoff now; skip ends an open task as skipped, its dependents
 * applying their ignore rules as for any skipped dep; complete stores an output given by hand (checked against
 * `returns`) and its dependents run. A running task is acted on only with `force` (its attempt cancelled first).
 */
export async function taskAction(
  ctx: RuntimeContext,
  workflowId: string,
  name: string,
  action: TaskAction,
  o: TaskActionOptions & { output?: unknown },
): Promise<TaskActionResult> {
  const who = actorOf(o);
  if (action === 'complete') assertStorable(o.output, 'the output');
  // a dry run has a transaction of its own, rolled back whatever it finds
  const options = o.dryRun ? { ...o, tx: undefined } : o;
  return workflowWrite(ctx, options, workflowId, async (tx, advance) => {
    const w = (await lockWorkflows(tx, ctx.s, [workflowId])).get(workflowId);
    if (!w) throw new WorkflowNotFoundError(workflowId);
    let tasks = await actionTasks(tx, ctx.s, workflowId);
    const before = new Map(tasks.map((t) => [t.name, t.state]));
    const task = tasks.find((t) => t.name === name);
    if (!task) throw new TaskNotFoundError(workflowId, name);
    const output = action === 'complete' ? await checkedOutput(tx, ctx, workflowId, task, o.output) : undefined;
    const step = actionStep(action, task, o.force === true);
    let reopened: string[] = [];
    if ('reopen' in step) {
      reopened = await reopen(tx, advance, workflowId, w.state === 'running', tasks, name);
      tasks = await actionTasks(tx, ctx.s, workflowId);
    } else if ('retryNow' in step) await retryNow(tx, ctx.s, workflowId, name, advance.now);
    const cancelled = 'takeOver' in step && step.running ? task.attempt : null;
    if (action !== 'retry') await finish(tx, ctx, advance, workflowId, tasks.find((t) => t.name === name)!, action, who.actor, output);
    if (o.dryRun) {
      const after = await actionTasks(tx, ctx.s, workflowId);
      const moved = after.filter((t) => t.name !== name && t.state !== before.get(t.name));
      const names = (states: Set<string> | string) =>
        moved.filter((t) => (typeof states === 'string' ? t.state === states : states.has(t.state))).map((t) => t.name);
      const state = (await lockWorkflows(tx, ctx.s, [workflowId])).get(workflowId)?.state ?? w.state;
      const preview = { run: names(RUNS), skipped: names('skipped'), failed: names(FAILS), workflow_state: state };
      const self = after.find((t) => t.name === name)!;
      throw new DryRunDone({ workflow_id: workflowId, task: name, action, state: self.state, reopened, cancelled_attempt: cancelled, preview });
    }
    if (cancelled !== null) await notifyTaskCancel(tx, channels(ctx.schema).cancel, workflowId, name);
    const detail = { forced: cancelled !== null, reopened, ...(output ? { output_bytes: output.bytes } : {}) };
    await writeAudit(tx, ctx.s, advance.now, [{ action: `task.${action}`, target: workflowId, workflow_id: workflowId, task: name, ...who, detail }]);
    const after = (await actionTasks(tx, ctx.s, workflowId)).find((t) => t.name === name)!;
    return { workflow_id: workflowId, task: name, action, state: after.state, reopened, cancelled_attempt: cancelled };
  }).catch((error: unknown) => {
    if (error instanceof DryRunDone) return error.result;
    throw error;
  });
}

/** The output given by hand, storable and within the task's max_output, checked against its `returns`. */
async function checkedOutput(q: Queryable, ctx: RuntimeContext, workflowId: string, task: ActionTaskRow, output: unknown) {
  const version = await workflowVersion(q, ctx.s, workflowId);
  const def = version && (await ctx.definitions.find(q, version.name, version.hash));
  const spec = def?.tasks.find((t) => t.name === task.template);
  const value = output === undefined ? null : output;
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text);
  const limit = spec?.max_output ?? MAX_HAND_OUTPUT;
  if (bytes > limit) throw new OperationInvalidError(`the output is ${bytes} bytes of JSON, over task "${task.name}"'s max_output of ${limit}`);
  if (spec?.returns) {
    const problems = outputProblems(spec.returns as Record<string, unknown>, value);
    if (problems.length > 0)
      throw new OutputInvalidError(`the output breaks the returns schema of task "${task.template}": ${describeOutputProblems(problems)}`);
  }
  // stored as a handler's would be: what returns marks sensitive sealed
  const paths = sensitivePathsOf(spec?.returns);
  if (paths.length === 0) return { value, bytes };
  if (!ctx.dataKeys) throw new SensitiveKeysMissingError(version!.name, `tasks.${task.template}.returns`);
  return { value: sealPaths(value, paths, ctx.dataKeys, new Set()), bytes };
}

/**
 * Opens a task that ended without completing again, with what it ended downstream: a final workflow starts a
 * new attempt with them (as a retry does), a running one counts them open again. The names opened.
 */
async function reopen(q: Queryable, advance: AdvanceContext, workflowId: string, running: boolean, tasks: readonly ActionTaskRow[], name: string) {
  const { selected, failed } = reopenSelection(tasks, name, running);
  if (!running) return (await retryWorkflow(q, advance, workflowId, { mode: 'failed_only', resetHistory: false, selection: selected }))?.retried ?? [];
  const rows = runAgainRows(tasks, selected, advance.now);
  await resetTasks(q, advance.s, workflowId, rows, false);
  await reopenCounts(q, advance.s, workflowId, rows.length, failed);
  await activateWaits(
    q,
    advance,
    workflowId,
    rows.filter((r) => r.deps_left === 0 && r.state === 'pending').map((r) => r.name),
  );
  return rows.map((r) => r.name);
}

/** Skip or complete an open task (taken over from its worker when running), and advance its dependents. */
async function finish(
  q: Queryable,
  ctx: RuntimeContext,
  advance: AdvanceContext,
  workflowId: string,
  task: ActionTaskRow,
  action: 'skip' | 'complete',
  actor: string,
  output: { value: unknown } | undefined,
): Promise<void> {
  if (isFinal(task.state)) return;
  const message = `attempt cancelled by ${actor} (braid task ${action})`;
  if (action === 'skip') {
    const skipped = await skipOpenTask(q, ctx.s, { workflowId, name: task.name, now: advance.now, message });
    if (skipped) await advanceWorkflow(q, advance, workflowId, [{ name: task.name, state: 'skipped', dependents: skipped.dependents }]);
    return;
  }
  const operator = `operator ${actor}`;
  const taken = await takeOver(q, ctx.s, { workflowId, name: task.name, now: advance.now, operator, message });
  if (!taken) return;
  await completeAll(q, advance, [
    { workflowId, name: task.name, attempt: taken.attempt, workerId: operator, output: output?.value, dependents: taken.dependents },
  ]);
}
