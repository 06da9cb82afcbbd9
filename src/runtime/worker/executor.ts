import type { CompileLimits } from '../../compiler/compile-error.js';
import { START_KIND } from '../../compiler/normalize.js';
import type { PlanTask } from '../../compiler/plan.js';
import { advancing, type RuntimeContext } from '../core/context.js';
import { ArgsError, errorMessage } from '../core/describe-error.js';
import { braidOutcome, type Scrubbed, Secrets, scrubOutcome, scrubText } from '../core/privacy.js';
import { assertStorable } from '../core/storable.js';
import { markSecrets, secretsIn } from '../db/sealing.js';
import { completeAttempt } from '../engine/completion.js';
import { endAttempt } from '../engine/end-attempt.js';
import { renderTaskArgs } from '../engine/render-args.js';
import { runStartTask } from '../engine/start-children.js';
import { type AttemptOutcome, type AttemptRef, storeRenderedArgs } from '../sql/attempts.js';
import { type FetchedTask, largeOutputs } from '../sql/fetch.js';
import { signalsByIds, signalTraceContexts } from '../sql/signals.js';
import { KEY_WAIT_PREFIX } from '../sql/task-logs.js';
import { markNeedsKeys } from '../sql/workers.js';
import { workflowTraceContexts } from '../sql/workflows.js';
import type { Logger } from '../telemetry/log.js';
import type { Metrics } from '../telemetry/metrics.js';
import { WorkflowTraceParents } from '../telemetry/trace-parents.js';
import type { Tracing } from '../telemetry/tracing.js';
import { evidenceSignalIds, taskWait } from '../waits/task-wait.js';
import type { WaitEvidence } from '../wire/index.js';
import { type Attempt, AttemptContext } from './attempt.js';
import type { Completer, CompletionEnd } from './completer.js';
import type { EndRecorder } from './ends.js';
import type { Handler, Handlers, TaskContext, TaskWait } from './handlers.js';
import { outcomeOf } from './outcome.js';
import { OutputRules, type StoredOutput } from './output-rules.js';
import { type LogBounds, LogWriter } from './task-log.js';

/**
 * What a handler's resolved wait says about the engine's latency: from the wait's activation to its resolution
 * (once per task: its first attempt), from the last signal that counted to this start, and how late a timer
 * that made it true was seen.
 */
function observeWait(metrics: Metrics, task: FetchedTask, wait: TaskWait): void {
  const labels = { kind: task.kind };
  const now = Date.now();
  if (task.attempt === 1) metrics.waitResolution.observe(labels, Math.max(0, wait.resolvedAt.getTime() - wait.startedAt.getTime()) / 1000);
  const signals = Object.values(wait.terms).flatMap((t) => (t.kind === 'signal' && t.value ? t.signals : []));
  if (signals.length > 0) {
    const last = Math.max(...signals.map((r) => new Date(r.created_at).getTime()));
    metrics.signalToStart.observe(labels, Math.max(0, now - last) / 1000);
  }
  for (const name of wait.satisfied) {
    const t = wait.terms[name];
    if (t.kind === 'timer' && t.fireAt) metrics.timerLateness.observe(labels, Math.max(0, wait.resolvedAt.getTime() - t.fireAt.getTime()) / 1000);
  }
}

/** A completion found its attempt no longer running: the transaction it was in rolls back, and nothing is wrong. */
class AttemptEnded extends Error {
  override name = 'AttemptEnded';
}

export interface ExecutorOptions extends RuntimeContext {
  id: string;
  /** Largest output stored, in bytes of JSON (default 1 MiB). */
  maxOutputBytes: number;
  /** Limits of the compiles start tasks make (children). */
  limits?: Partial<CompileLimits>;
  log: Logger;
  /** Bounds of each attempt's ctx.log (default 1,000 lines and 256 KiB). */
  logBounds?: Partial<LogBounds>;
}

/**
 * Runs one claimed attempt to its recorded end: the handler, then its completion (batched, in the handler's
 * own transaction, or with the tasks it added), or its failure, cancel, snooze or release.
 */
export class Executor {
  /** Handlers still running after their attempts ended. */
  private outliving = 0;
  /** The sets of data keys this worker said it lacks (each said once). */
  private readonly saidKeys = new Set<string>();
  /** Stores the attempts' ctx.log lines. */
  readonly logs: LogWriter;
  private readonly outputs: OutputRules;
  /** Workflows' stored trace contexts, read only while spans record. */
  private traceParents?: WorkflowTraceParents;

  constructor(
    private readonly o: ExecutorOptions,
    private readonly ends: EndRecorder,
    private readonly completer: Completer,
  ) {
    this.logs = new LogWriter({ db: o.db, s: o.s, log: o.log, bounds: o.logBounds });
    this.outputs = new OutputRules(o);
  }

  /** At the worker's stop: the log lines written, the output check's thread ended. */
  async stop(): Promise<void> {
    await this.logs.stop();
    await this.outputs.stop();
  }

  /**
   * One attempt: the handler with its timeout, then its completion, or its failure. Never throws, and never
   * leaves the attempt running while this worker lives: an end that fails to commit is tried again, and one
   * the database refuses for good (bad data) is recorded as the attempt's error. Returns whether its end
   * committed.
   */
  async execute(attempt: Attempt, handlers: Handlers, onHandlerSettled: () => void): Promise<boolean> {
    const { task, ref } = attempt;
    if (task.flow_error) {
      // stored by an older braid out of range: no limit can be kept for it, so it ends (its queue goes on)
      onHandlerSettled();
      const message =
        `its flow control cannot be enforced (${task.flow_error}): ` +
        'register the definition again with braid, which checks the ranges, and retry the workflow';
      return this.fail(task, ref, braidOutcome({ type: 'cancel', error: { message, kind: 'cancel', code: 'flow_invalid' } }));
    }
    if (task.missing_keys) return this.giveBackSealed(task, ref, task.missing_keys, onHandlerSettled);
    let committed = true;
    let outcome: AttemptOutcome | undefined;
    let thrown: unknown;
    try {
      let output: unknown;
      try {
        if (task.large_deps) {
          const large = await largeOutputs(this.o.db, this.o.s, task.workflow_id, task.large_deps);
          Object.assign((task.dep_outputs ??= {}), large);
          markSecrets(task, secretsIn(large) ?? new Set());
        }
        if (task.deferred) await this.renderArgs(attempt);
        if (task.wait_evidence) attempt.wait = await this.loadWait(task, task.wait_evidence);
        this.o.metrics?.tasksStarted.inc({ kind: task.kind, queue: task.queue });
        if (attempt.wait && this.o.metrics) observeWait(this.o.metrics, task, attempt.wait);
        if (this.o.tracing?.enabled()) await this.beginSpans(attempt, this.o.tracing);
        const handler: Handler = task.kind === START_KIND ? (_args, ctx) => this.startChildren(task, ctx) : handlers[task.kind];
        const ctx = new AttemptContext(this.o, attempt, this.logs);
        output = await (attempt.span ? this.o.tracing!.run(attempt.span, () => attempt.run(handler, ctx)) : attempt.run(handler, ctx));
      } finally {
        onHandlerSettled();
      }
      // every chunk stored before the end is: a reader that sees the task ended has read them all
      if (attempt.streams) await attempt.streams.close(attempt.tx?.queryable);
      // inside the handler's own transaction while it is open (the embedded database runs one at a time)
      // answered at once for nearly every task: an await only where a look-up or a check is pending
      const accepted = this.outputs.accept(task, output, attempt.tx?.queryable ?? this.o.db, attempt.secrets());
      const json = accepted instanceof Promise ? await accepted : accepted;
      // stored as text from here: a large value can be collected while its completion commits
      output = undefined;
      if (attempt.log) await this.logs.end(attempt.log, attempt.tx?.queryable);
      const end = await this.persistCompletion(attempt, json);
      if (end === 'committed') this.o.log.taskDone(task, 'completed');
      else if (end === 'skipped') this.o.log.taskDone(task, 'completed, but the attempt was no longer running: result discarded');
      else if (end === 'gave-up') committed = false;
      else outcome = { type: 'error', error: { message: `its output could not be stored: ${errorMessage(end.error)}`, kind: 'output' } };
    } catch (error) {
      thrown = error;
      if (attempt.tx) await attempt.tx.rollback();
      outcome = outcomeOf(error);
      if (attempt.streams) await attempt.streams.close().catch(() => undefined);
      if (attempt.log) await this.logs.end(attempt.log);
      // (what the handler threw may be hostile to look at: the attempt knows why it ended)
      this.watchAbandoned(attempt);
    }
    // what the handler made of its sensitive values is stored, printed and traced only as the privacy room leaves it
    const secrets = outcome ? attempt.secrets(renderedSecrets(thrown)) : Secrets.none;
    const stored = outcome && scrubOutcome(outcome, secrets);
    if (stored) committed = await this.fail(task, ref, stored, secrets);
    const ended = stored ? (stored.type === 'error' ? (stored.error.kind ?? 'error') : stored.type) : 'completed';
    if (attempt.span) {
      const error = stored?.type === 'error' ? { message: stored.error.message, type: stored.error.code ?? stored.error.kind ?? 'error' } : undefined;
      this.o.tracing!.end(attempt.span, error, { 'braid.task.outcome': ended });
    }
    if (this.o.metrics && attempt.startedAt > 0) {
      const labels = { kind: task.kind, queue: task.queue, outcome: ended };
      this.o.metrics.tasksEnded.inc(labels);
      this.o.metrics.attemptDuration.observe(labels, (Date.now() - attempt.startedAt) / 1000);
    }
    return committed;
  }

  /**
   * The attempt's span, under its workflow attempt's, and, for a task's first attempt after its wait resolved,
   * the wait's span, linked to the spans that sent the signals and began the awaited workflows that counted.
   */
  private async beginSpans(attempt: Attempt, tracing: Tracing): Promise<void> {
    const { task } = attempt;
    this.traceParents ??= new WorkflowTraceParents(this.o);
    const parent = await this.traceParents.get(task.workflow_id);
    const attributes = { 'braid.workflow.id': task.workflow_id, 'braid.task.name': task.name, 'braid.task.kind': task.kind };
    attempt.span = tracing.begin(
      `braid.task ${task.template}`,
      'consumer',
      {
        ...attributes,
        'braid.task.queue': task.queue,
        'braid.task.attempt': task.attempt,
        'braid.task.max_attempts': task.max_attempts,
        'braid.worker.id': this.o.id,
      },
      tracing.contextOf(parent),
    );
    const wait = attempt.wait;
    if (!wait || task.attempt !== 1) return;
    const signals = wait.satisfied.flatMap((term) => {
      const t = wait.terms[term];
      return t.kind === 'signal' ? t.signals.map((row) => ({ term, row })) : [];
    });
    const awaited = wait.satisfied.flatMap((term) => {
      const t = wait.terms[term];
      return t.kind === 'workflows' ? t.workflows.map((w) => ({ term, w })) : [];
    });
    const [signalContexts, workflowContexts] = await Promise.all([
      signals.length === 0
        ? new Map<string, string | null>()
        : signalTraceContexts(
            this.o.db,
            this.o.s,
            task.workflow_id,
            signals.map((x) => x.row.id),
          ),
      awaited.length === 0
        ? new Map<string, string | null>()
        : workflowTraceContexts(
            this.o.db,
            this.o.s,
            awaited.map((x) => x.w.id),
          ),
    ]).catch(() => [new Map<string, string | null>(), new Map<string, string | null>()]);
    tracing.emit(
      `braid.wait ${task.template}`,
      parent,
      { start: wait.startedAt, end: wait.resolvedAt },
      { ...attributes, 'braid.wait.expr': wait.expr, 'braid.wait.satisfied': wait.satisfied },
      [
        ...signals.map(({ term, row }) => ({
          stored: signalContexts.get(row.id) ?? null,
          attributes: { 'braid.link': 'signal', 'braid.wait.term': term, 'braid.signal.id': row.id, 'braid.signal.key': row.key },
        })),
        ...awaited.map(({ term, w }) => ({
          stored: workflowContexts.get(w.id) ?? null,
          attributes: { 'braid.link': 'workflow', 'braid.wait.term': term, 'braid.workflow.id': w.id, 'braid.workflow.state': w.state ?? 'unknown' },
        })),
      ],
    );
  }

  /** The handler's ctx.wait: the stored evidence, with the signal rows it names. */
  /** What satisfied the task's wait: its evidence with the signals the claim read (a worker's own read otherwise). */
  private async loadWait(task: FetchedTask, evidence: WaitEvidence): Promise<TaskWait> {
    if (task.wait_signals) return taskWait(evidence, task.wait_signals);
    const ids = evidenceSignalIds(evidence);
    return taskWait(evidence, ids.length === 0 ? [] : await signalsByIds(this.o.db, this.o.s, task.workflow_id, ids));
  }

  /**
   * A handler that does not stop on ctx.signal runs on after its attempt ended (its slot is free, and a retry
   * may already run the task again): said once, with how long it has run, and once more when it settles, since
   * its result is dropped.
   */
  private watchAbandoned(attempt: Attempt): void {
    const outlived = attempt.outlived;
    if (!outlived) return;
    const { running, why } = outlived;
    const { task } = attempt;
    const began = Date.now();
    const what = `the handler of ${task.workflow_id}/${task.name} (kind ${task.kind}, attempt ${task.attempt})`;
    this.outliving++;
    this.o.log.warn(
      `${what} is still running ${seconds(began - attempt.startedAt)} after it was called, though ` +
        `its attempt ended (${why.message}): it does not stop on ctx.signal; ` +
        `its result will be dropped (${this.outliving} handler(s) of this worker outlive their attempts)`,
    );
    const settled = (how: string) => () => {
      this.outliving--;
      this.o.log.info(`${what} ${how} ${seconds(Date.now() - began)} after its attempt ended: its result was dropped (${this.outliving} still outlive theirs)`);
    };
    void running.then(settled('settled'), settled('failed'));
  }

  /** Commits an attempt's completion: in the handler's own transaction, with its extensions, or in a batch. */
  private persistCompletion(attempt: Attempt, json: StoredOutput): Promise<CompletionEnd> {
    if (attempt.tx || attempt.extensions.length > 0) return this.persistApart(attempt, json);
    const { task } = attempt;
    const output = json.value;
    return this.completer.complete(
      {
        workflowId: task.workflow_id,
        name: task.name,
        attempt: task.attempt,
        workerId: this.o.id,
        output,
        outputText: output === undefined ? json.text : undefined,
        dependents: task.dependents,
        dependentsWait: task.dependents_wait,
        tid: task.tid,
      },
      task,
    );
  }

  /** A completion in the handler's own transaction, or with the tasks it added: outside the batch. */
  private async persistApart(attempt: Attempt, json: StoredOutput): Promise<CompletionEnd> {
    if (attempt.tx) {
      // the handler's own writes are in that transaction: when it cannot commit they are gone, and the attempt
      // is an error (it runs again by the retry rules), not a completion to try again
      try {
        await attempt.tx.commit(json, attempt.extensions);
        return 'committed';
      } catch (error) {
        return { error: new Error(`its transaction did not commit (${errorMessage(error)})`) };
      }
    }
    const end = await this.ends.retry(attempt.task, () => this.completeExtending(attempt.ref, json, attempt.extensions));
    return end === 'done' ? 'committed' : end;
  }

  /** A completion that adds tasks: the extension and the completion commit together, outside the batch. */
  private async completeExtending(ref: AttemptRef, output: StoredOutput, extensions: PlanTask[][]): Promise<void> {
    await advancing(this.o, async (tx, ctx) => {
      // no longer running (timed out, cancelled or rescued): the extension is rolled back with the completion
      if (!(await completeAttempt(tx, ctx, ref, output, extensions))) throw new AttemptEnded();
    }).catch((error: unknown) => {
      if (!(error instanceof AttemptEnded)) throw error;
    });
  }

  /**
   * Records an attempt's failure (or cancel, snooze, release), tried again while the database is unreachable;
   * one the database refuses for good is recorded once more as a bare error. False when it could not be
   * recorded: the attempt is then listed for the leader to rescue.
   */
  async fail(task: FetchedTask, ref: AttemptRef, outcome: Scrubbed<AttemptOutcome>, secrets = Secrets.none): Promise<boolean> {
    const record = (o: Scrubbed<AttemptOutcome>) => async () => {
      await advancing(this.o, (tx, ctx) => endAttempt(tx, ctx, ref, o));
    };
    let end = await this.ends.retry(task, record(outcome));
    if (typeof end === 'object') {
      // a database's refusal may quote what it was sent
      const bare = scrubOutcome<AttemptOutcome>(
        { type: 'error', error: { message: `the attempt failed, and its error could not be recorded (${errorMessage(end.error)})`, kind: 'error' } },
        secrets,
      );
      end = await this.ends.retry(task, record(bare));
    }
    if (end === 'done') {
      this.o.log.taskDone(task, outcome.type === 'error' ? `failed: ${outcome.error.message}` : outcome.type);
      return true;
    }
    if (typeof end === 'object')
      this.o.log.warn(`recording the end of ${task.workflow_id}/${task.name} failed (the leader rescues it): ${scrubText(errorMessage(end.error), secrets)}`);
    this.ends.abandon(task, false);
    return false;
  }

  /**
   * A task holding values of data keys this worker was not given: never run on sealed values, but marked with the
   * keys it needs (no worker without them claims it again) and given back at once (a snooze: no attempt used
   * up), with a line on the task saying which key it waits for, and once on the worker's own log per set of keys.
   * A task with flow control, whose pick does not read the mark, is given back for WAIT_FOR_KEY_MS.
   */
  private async giveBackSealed(task: FetchedTask, ref: AttemptRef, keys: readonly string[], onHandlerSettled: () => void): Promise<boolean> {
    onHandlerSettled();
    const which = keys.join(', ');
    const why = `${KEY_WAIT_PREFIX} ${which}: worker ${this.o.id} was not given ${keys.length > 1 ? 'them' : 'it'} (config keys:, or BRAID_KEYS)`;
    if (!this.saidKeys.has(which)) {
      this.saidKeys.add(which);
      this.o.log.warn(`tasks hold values sealed with data key ${which}, which this worker was not given: it gives them back for a worker that has it`);
    }
    await this.logs.braidLine(task, 'warn', why);
    const flowed = await markNeedsKeys(this.o.db, this.o.s, task.workflow_id, task.name, keys);
    return this.fail(task, ref, braidOutcome({ type: 'snooze', ms: flowed ? WAIT_FOR_KEY_MS : 0 }));
  }

  /** Renders the args and metadata that read deps, stores them with the attempt, and hands them to the handler. */
  private async renderArgs(attempt: Attempt): Promise<void> {
    const { task, ref } = attempt;
    const rendered = await renderTaskArgs(this.o, task, task.deferred!);
    assertStorable(rendered.args, `the args of task "${task.name}"`);
    assertStorable(rendered.metadata, `the metadata of task "${task.name}"`);
    const tid = await storeRenderedArgs(this.o.db, this.o.s, ref, rendered.stored);
    if (tid === undefined) throw new Error('the attempt is no longer running');
    Object.assign(task, { args: rendered.args, tid });
  }

  private startChildren(task: FetchedTask, ctx: TaskContext): Promise<unknown> {
    return runStartTask(this.o, task, ctx);
  }
}

/** The secrets args that failed to render read (what the handler threw may be a hostile proxy: read safely). */
function renderedSecrets(thrown: unknown): ReadonlySet<string> | undefined {
  try {
    return thrown instanceof ArgsError ? thrown.secrets : undefined;
  } catch {
    return undefined;
  }
}

/** How long a task sealed with a key this worker lacks is given back for, before a worker looks again. */
const WAIT_FOR_KEY_MS = 30_000;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
