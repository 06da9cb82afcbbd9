import { describe, expect, it } from 'vitest';
import type { TaskWait } from '../../src/index.js';
import { fetchTasks } from '../../src/runtime/sql/fetch.js';
import { signalsByIds } from '../../src/runtime/sql/signals.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { advance, backend, drivenRuntime, final, settle } from '../helpers/runtime.js';

// ctx.wait: what satisfied a task's wait, as it stood when the wait resolved — the rows that counted toward
// each signal term (not every row of the key), each term's value, the awaited workflows of a workflows term.
const REFUND = `name: refund
inputs: { type: object, properties: { refund: { type: string } }, required: [refund] }
tasks:
  decide:
    kind: decide
    wait:
      expr: reviewed || sla
      terms:
        reviewed:
          signal: review
          where: payload.approved == true
          distinct: payload.reviewer
          count: 2
        sla: { timer: { after_wait_started: 1h } }
  plain:
    kind: plain
`;

const CHILD = `name: child
inputs: { type: object, properties: { n: { type: integer } }, required: [n] }
tasks:
  work: { kind: work, args: { n: "\${{ inputs.n }}" } }
output: { n: "\${{ tasks.work.output.n }}" }
`;

const GATHER = `name: gather
inputs: { type: object, properties: { ids: { type: array, items: { type: string } } }, required: [ids] }
tasks:
  after:
    kind: after
    wait: { terms: { done: { workflows: { ids: "\${{ inputs.ids }}", mode: all } } } }
`;

function recorder() {
  const seen = new Map<string, TaskWait | null>();
  const handlers: Handlers = {
    decide: async (_args, ctx) => {
      seen.set(`${ctx.workflowId}/decide`, ctx.wait);
      return { ok: true };
    },
    plain: async (_args, ctx) => {
      seen.set(`${ctx.workflowId}/plain`, ctx.wait);
      return {};
    },
    work: async (args: { n: number }) => ({ n: args.n }),
    after: async (_args, ctx) => {
      seen.set(`${ctx.workflowId}/after`, ctx.wait);
      return {};
    },
  };
  return { seen, handlers };
}

describe(`ctx.wait (${backend})`, () => {
  it('shows the rows that counted toward a signal term, not every row of the key, and which terms were true', async () => {
    const { seen, handlers } = recorder();
    const rt = await drivenRuntime({ definitions: { refund: REFUND }, handlers });
    await rt.startWorker();
    const id = await rt.start('refund', { refund: 'r1' });
    const w = rt.workflow(id);
    const other = await w.signals.emit('review', { approved: false, reviewer: 'ada' });
    const first = await w.signals.emit('review', { approved: true, reviewer: 'grace' });
    const again = await w.signals.emit('review', { approved: true, reviewer: 'grace' });
    const second = await w.signals.emit('review', { approved: true, reviewer: 'linus' });
    expect(second.resolved).toEqual(['decide']);
    await final(rt, id);
    const wait = seen.get(`${id}/decide`)!;
    expect(wait.expr).toBe('reviewed || sla');
    expect(wait.satisfied).toEqual(['reviewed']);
    const reviewed = wait.terms.reviewed;
    expect(reviewed).toMatchObject({ kind: 'signal', value: true, matched: 2, required: 2, distinct: ['grace', 'linus'] });
    if (reviewed.kind !== 'signal') throw new Error('not a signal term');
    expect(reviewed.signals.map((r) => r.id)).toEqual([first.signal.id, second.signal.id]);
    expect(reviewed.signals.map((r) => r.payload)).toEqual([
      { approved: true, reviewer: 'grace' },
      { approved: true, reviewer: 'linus' },
    ]);
    // neither ada's rejection nor grace's second approval is evidence
    const ids = reviewed.signals.map((r) => r.id);
    expect(ids).not.toContain(other.signal.id);
    expect(ids).not.toContain(again.signal.id);
    expect(wait.terms.sla).toMatchObject({ kind: 'timer', value: false });
    expect(wait.resolvedAt.getTime()).toBeGreaterThanOrEqual(wait.startedAt.getTime());
    // a task without a wait sees null
    expect(seen.get(`${id}/plain`)).toBeNull();
  });

  it('the claim hands a resolved wait its signals, as a read of its own would find them (no round trip before the handler)', async () => {
    const { handlers } = recorder();
    const rt = await drivenRuntime({ definitions: { refund: REFUND }, handlers });
    const id = await rt.start('refund', { refund: 'r1' });
    const w = rt.workflow(id);
    await w.signals.emit('review', { approved: false, reviewer: 'ada' });
    const first = await w.signals.emit('review', { approved: true, reviewer: 'grace' });
    const second = await w.signals.emit('review', { approved: true, reviewer: 'linus' });
    expect(second.resolved).toEqual(['decide']);
    const { s } = rt.internals;
    const { tasks } = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['decide', 'plain'], limit: 10, workerId: 'w1', now: new Date() });
    const decide = tasks.find((t) => t.name === 'decide')!;
    const plain = tasks.find((t) => t.name === 'plain')!;
    expect(plain.wait_signals).toBeNull();
    expect(decide.wait_signals).toEqual(await signalsByIds(rt.db, s, id, [first.signal.id, second.signal.id]));
    expect(decide.wait_signals!.map((r) => r.id)).toEqual([first.signal.id, second.signal.id]);
    expect(decide.wait_signals![0].created_at).toBeInstanceOf(Date);
  });

  it('a wait resolved by its timer shows the timer true and the partial quorum with its rows', async () => {
    const { seen, handlers } = recorder();
    const rt = await drivenRuntime({ definitions: { refund: REFUND }, handlers });
    await rt.startWorker();
    const id = await rt.start('refund', { refund: 'r1' });
    const one = await rt.workflow(id).signals.emit('review', { approved: true, reviewer: 'grace' });
    await settle(rt);
    await advance(rt, 3_600_000);
    expect((await final(rt, id)).state).toBe('completed');
    const wait = seen.get(`${id}/decide`)!;
    expect(wait.satisfied).toEqual(['sla']);
    expect(wait.terms.sla).toMatchObject({ kind: 'timer', value: true });
    expect(wait.terms.reviewed).toMatchObject({ kind: 'signal', value: false, matched: 1, required: 2 });
    expect((wait.terms.reviewed as { signals: { id: string }[] }).signals.map((r) => r.id)).toEqual([one.signal.id]);
  });

  it('a workflows term shows the awaited workflows with their states and outputs', async () => {
    const { seen, handlers } = recorder();
    const rt = await drivenRuntime({ definitions: { child: CHILD, gather: GATHER }, handlers });
    await rt.startWorker();
    const children = [await rt.start('child', { n: 1 }), await rt.start('child', { n: 2 })];
    const parent = await rt.start('gather', { ids: children });
    for (const c of children) expect((await final(rt, c)).state).toBe('completed');
    await rt.maintenance();
    expect((await final(rt, parent)).state).toBe('completed');
    const wait = seen.get(`${parent}/after`)!;
    expect(wait.satisfied).toEqual(['done']);
    expect(wait.terms.done).toEqual({
      kind: 'workflows',
      value: true,
      outcome: 'satisfied',
      workflows: children.map((id, i) => ({ id, state: 'completed', output: { n: i + 1 } })),
      completed: 2,
      failed: 0,
      required: 2,
    });
  });
});
