import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { advance, backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

/** Handlers that record each run (task name -> runs) and return their args. */
function recording(kinds: string[]) {
  const runs: string[] = [];
  const handlers: Handlers = Object.fromEntries(
    kinds.map((k) => [
      k,
      async (args: unknown, ctx: { taskName: string }) => {
        runs.push(ctx.taskName);
        return args ?? {};
      },
    ]),
  );
  return { runs, handlers };
}

/** Whether the task's wait is active (settled() checks it once a driven run is quiet). */
function waitingOn(rt: Runtime, id: string, task: string): () => Promise<boolean> {
  return async () => (await rt.workflow(id).task(task)).wait?.phase === 'waiting';
}

const review = `name: review
tasks:
  charge: { kind: step }
  decide:
    kind: step
    deps: [charge]
    wait:
      expr: manual_review_received || review_sla
      terms:
        manual_review_received:
          signal: manual_review
          where: payload.approved == true && payload.reviewer != ""
          label: Manual review approved
        review_sla:
          timer: { after_wait_started: 30m }
          label: Review SLA elapsed
  ship: { kind: step, deps: [decide] }
`;

describe(`waits: signals and timers (${backend})`, () => {
  it('manual review approved resolves the wait, with evidence', async () => {
    const clock = new VirtualClock(new Date());
    const { runs, handlers } = recording(['step']);
    const rt = await drivenRuntime({ handlers, virtualClock: clock, workerDeadAfterMs: 86_400_000, definitions: { review } });
    await rt.startWorker();
    const id = await rt.start('review');
    await settled(rt, waitingOn(rt, id, 'decide'));
    expect(runs).toEqual(['charge']);
    const status = await rt.workflow(id).status();
    expect(status.tasks.find((t) => t.name === 'decide')!.pending_reason).toMatch(
      /^waiting on manual_review_received \|\| review_sla: manual_review_received 0\/1 signal, review_sla fires at /,
    );

    const emitted = await rt.workflow(id).signals.emit('manual_review', { approved: true, reviewer: 'alice' }, { source: { actor: 'alice' } });
    expect(emitted.resolved).toEqual(['decide']);
    expect(emitted.signal).toMatchObject({ key: 'manual_review', attempt: 1, payload: { approved: true, reviewer: 'alice' }, source: { actor: 'alice' } });
    const w = await final(rt, id);
    expect(w.state).toBe('completed');
    expect(runs).toEqual(['charge', 'decide', 'ship']);
    const decide = await rt.workflow(id).task('decide');
    expect(decide.wait?.phase).toBe('resolved');
    const evidence = decide.wait!.evidence!;
    expect(evidence.result).toBe(true);
    expect(evidence.signal_ids).toEqual([emitted.signal.id]);
    expect(evidence.boundary).toBe(emitted.signal.id);
    expect(evidence.terms).toEqual([
      expect.objectContaining({ name: 'manual_review_received', kind: 'signal', label: 'Manual review approved', value: true, matched: 1, required: 1 }),
      expect.objectContaining({ name: 'review_sla', kind: 'timer', label: 'Review SLA elapsed', value: false, fired: false }),
    ]);
  });

  it('the 30-minute SLA resolves the wait when no approval comes (injected clock)', async () => {
    const clock = new VirtualClock(new Date());
    const { runs, handlers } = recording(['step']);
    const rt = await drivenRuntime({ handlers, virtualClock: clock, workerDeadAfterMs: 86_400_000, definitions: { review } });
    await rt.startWorker();
    const id = await rt.start('review');
    await settled(rt, waitingOn(rt, id, 'decide'));
    await rt.workflow(id).signals.emit('manual_review', { approved: false, reviewer: 'bob' });
    clock.advance(29 * 60_000);
    await rt.maintenance();
    expect((await rt.workflow(id).task('decide')).state).toBe('pending');
    clock.advance(2 * 60_000);
    const { timers } = await rt.maintenance();
    expect(timers).toBe(1);
    expect((await final(rt, id)).state).toBe('completed');
    expect(runs).toEqual(['charge', 'decide', 'ship']);
    const evidence = (await rt.workflow(id).task('decide')).wait!.evidence!;
    expect(evidence.terms.map((t) => [t.name, t.value])).toEqual([
      ['manual_review_received', false],
      ['review_sla', true],
    ]);
    expect(evidence.inputs.timers.review_sla.fired).toBe(true);
    // the timer fires once
    expect((await rt.maintenance()).timers).toBe(0);
  });

  it('a signal emitted before the wait became active still counts', async () => {
    const { handlers } = recording(['step']);
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        early: `name: early\ntasks:\n  first: { kind: step }\n  then:\n    kind: step\n    deps: [first]\n    wait: { terms: { ok: { signal: go } } }\n`,
      },
    });
    await rt.startWorker();
    const id = await rt.start('early');
    // nothing has run yet: `first` is open, so `then` still waits on its deps
    const e = await rt.workflow(id).signals.emit('go', {});
    expect(e.resolved).toEqual([]);
    expect((await rt.workflow(id).task('then')).wait?.phase).toBe('pending_deps');
    expect((await final(rt, id)).state).toBe('completed');
    expect((await rt.workflow(id).task('then')).wait!.evidence!.signal_ids).toEqual([e.signal.id]);
  });

  it('a dependency output gate: true runs, false stays pending', async () => {
    const gate = `name: gate
inputs: { type: object, properties: { score: { type: number } }, required: [score] }
tasks:
  score_fraud: { kind: score, args: { score: "\${{ inputs.score }}" } }
  charge:
    kind: step
    deps: [score_fraud]
    wait: { terms: { fraud_ok: { expr: 'deps["score_fraud"].output.score < 90.0' } } }
`;
    const { runs, handlers } = recording(['step']);
    const rt = await drivenRuntime({ handlers: { ...handlers, score: async (args: { score: number }) => ({ score: args.score }) }, definitions: { gate } });
    await rt.startWorker();
    const low = await rt.start('gate', { score: 12.5 });
    const high = await rt.start('gate', { score: 97 });
    expect((await final(rt, low)).state).toBe('completed');
    await settled(rt, waitingOn(rt, high, 'charge'));
    const charge = await rt.workflow(high).task('charge');
    expect(charge.state).toBe('pending');
    expect(charge.wait!.last_evaluation!.terms).toEqual([expect.objectContaining({ name: 'fraud_ok', value: false })]);
    expect(runs).toEqual(['charge']);
    expect((await rt.workflow(low).task('charge')).wait!.evidence!.inputs.deps).toEqual({ score_fraud: { score: 12.5 } });
  });

  it('a two-signal quorum with a predicate ignores signals that do not match', async () => {
    const quorum = `name: quorum
tasks:
  decide:
    kind: step
    wait:
      terms:
        approvals: { signal: approval, where: 'payload.approved == true', count: 2 }
`;
    const { runs, handlers } = recording(['step']);
    const rt = await drivenRuntime({ handlers, definitions: { quorum } });
    await rt.startWorker();
    const id = await rt.start('quorum');
    const h = rt.workflow(id);
    await settled(rt, waitingOn(rt, id, 'decide'));
    const a = await h.signals.emit('approval', { approved: true, by: 'ann' });
    await h.signals.emit('approval', { approved: false, by: 'bob' });
    await h.signals.emit('other', { approved: true }, { anyKey: true });
    expect((await h.task('decide')).wait!.last_evaluation!.terms[0]).toMatchObject({ matched: 1, required: 2, value: false });
    const c = await h.signals.emit('approval', { approved: true, by: 'cy' });
    expect(c.resolved).toEqual(['decide']);
    expect((await final(rt, id)).state).toBe('completed');
    expect(runs).toEqual(['decide']);
    expect((await h.task('decide')).wait!.evidence!.terms[0].signal_ids).toEqual([a.signal.id, c.signal.id]);
  });

  it('a predicate that fails on a payload is recorded, the task stays pending, and a later good signal resolves it', async () => {
    const typed = `name: typed
tasks:
  decide:
    kind: step
    wait: { terms: { big: { signal: amount, where: 'payload.value > 100.0' } } }
`;
    const { handlers } = recording(['step']);
    const rt = await drivenRuntime({ handlers, definitions: { typed } });
    await rt.startWorker();
    const id = await rt.start('typed');
    const h = rt.workflow(id);
    await settled(rt, waitingOn(rt, id, 'decide'));
    await h.signals.emit('amount', { value: 'lots' });
    await h.signals.emit('amount', { other: 1 });
    const t = await h.task('decide');
    expect(t.state).toBe('pending');
    expect(t.wait!.last_evaluation!.terms[0].error).toMatch(/^signal \d+: /);
    expect((await h.status()).tasks[0].pending_reason).toMatch(/big 0\/1 signal \(error: signal \d+: .+\)/);
    const diagnostics = await h.waitDiagnostics('decide');
    expect(diagnostics.terms[0].error).toMatch(/^signal \d+: /);
    const good = await h.signals.emit('amount', { value: 250 });
    expect(good.resolved).toEqual(['decide']);
    expect((await final(rt, id)).state).toBe('completed');
  });
});

describe(`timers: the four anchors (${backend})`, () => {
  it('at, after_workflow_created, after_wait_started and after_task_finalized each fire at their time', async () => {
    const clock = new VirtualClock(new Date());
    const anchors = `name: anchors
inputs: { type: object, properties: { deadline: { type: string } }, required: [deadline] }
tasks:
  root_at:
    kind: step
    wait: { terms: { t: { timer: { at: "\${{ inputs.deadline }}" } } } }
  root_created:
    kind: step
    wait: { terms: { t: { timer: { after_workflow_created: 10m } } } }
  first: { kind: slow, args: { minutes: 5 } }
  after_started:
    kind: step
    deps: [first]
    wait: { terms: { t: { timer: { after_wait_started: 10m } } } }
  after_final:
    kind: step
    deps: [first, second]
    wait: { terms: { t: { timer: { after_task_finalized: { task: first, after: 15m } } } } }
  second: { kind: slow, args: { minutes: 8 } }
`;
    const { runs, handlers } = recording(['step']);
    // `first` takes 5 virtual minutes, `second` 8
    const rt = await drivenRuntime({
      handlers: { ...handlers, slow: async (args: { minutes: number }) => clock.sleep(args.minutes * 60_000).then(() => ({})) },
      virtualClock: clock,
      definitions: { anchors },
    });
    await rt.startWorker();
    const deadline = new Date(clock.now().getTime() + 20 * 60_000).toISOString();
    const id = await rt.start('anchors', { deadline });
    const h = rt.workflow(id);
    await settled(rt, waitingOn(rt, id, 'root_at'));
    // after_started fires at 15 (first ends at 5), after_final at 20 (15 from first's end), root_at at 20
    const at = async (minute: number) => {
      await advance(rt, (await h.load()).created_at.getTime() + minute * 60_000 - clock.now().getTime());
      return [...runs].sort();
    };
    expect(await at(11)).toEqual(['root_created']);
    expect(await at(16)).toEqual(['after_started', 'root_created']);
    expect(await at(19)).toEqual(['after_started', 'root_created']);
    // minute 21: both the absolute time (20) and first's finalization + 15 (20) passed
    expect(await at(21)).toEqual(['after_final', 'after_started', 'root_at', 'root_created']);
    expect((await final(rt, id)).state).toBe('completed');
    const fireAt = async (task: string) => (await h.task(task)).wait!.evidence!.inputs.timers.t.fire_at!;
    const created = (await h.load()).created_at.getTime();
    expect(new Date(await fireAt('root_at')).toISOString()).toBe(deadline);
    expect(new Date(await fireAt('root_created')).getTime()).toBe(created + 10 * 60_000);
    const first = (await h.task('first')).finalized_at!.getTime();
    expect(first).toBe(created + 5 * 60_000);
    expect(new Date(await fireAt('after_final')).getTime()).toBe(first + 15 * 60_000);
    expect(new Date(await fireAt('after_started')).getTime()).toBe(new Date((await h.task('after_started')).wait!.started_at!).getTime() + 10 * 60_000);
  });
});
