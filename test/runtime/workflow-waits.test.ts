import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

/** A child that waits for a `go` signal, then completes or fails as the signal says. */
const job = `name: job
inputs: { type: object, properties: { n: { type: integer } }, required: [n] }
tasks:
  work:
    kind: job
    max_attempts: 1
    args: { n: "\${{ inputs.n }}" }
    wait: { terms: { go: { signal: go } } }
output: { n: "\${{ tasks.work.output.n }}" }
`;

const gather = (mode: string, extra = '') => `name: gather_${mode}
inputs: { type: object, properties: { ids: { type: array, items: { type: string } } }, required: [ids] }
tasks:
  after:
    kind: after
    wait:
      terms:
        done: { workflows: { ids: "\${{ inputs.ids }}", mode: ${mode}${extra} } }
`;

const ran: string[] = [];
const handlers: Handlers = {
  job: async (args: { n: number }, ctx) => {
    const go = await ctx.signals.latest('go');
    if (!(go?.payload as { ok: boolean } | undefined)?.ok) throw new Error(`job ${args.n} failed`);
    return { n: args.n };
  },
  after: async (_args, ctx) => {
    ran.push(ctx.workflowId);
    return { results: await ctx.workflowResults('done') };
  },
};

const gated = `name: gated
inputs: { type: object, properties: { ids: { type: array, items: { type: string } } }, required: [ids] }
tasks:
  after:
    kind: after
    wait:
      expr: done && go
      terms:
        done: { workflows: { ids: "\${{ inputs.ids }}", mode: all } }
        go: { signal: go }
`;

async function setup(): Promise<Runtime> {
  const rt = await drivenRuntime({
    handlers,
    definitions: { job, gated, gather_all: gather('all'), gather_any: gather('any'), gather_quorum: gather('quorum', ', quorum: 2') },
  });
  await rt.startWorker();
  return rt;
}

async function jobs(rt: Runtime, n: number): Promise<string[]> {
  const ids = [];
  for (let i = 0; i < n; i++) ids.push(await rt.start('job', { n: i }));
  for (const id of ids) await settled(rt, async () => (await rt.workflow(id).task('work')).wait?.phase === 'waiting');
  return ids;
}

/** Ends a child as completed or failed, then lets the effects of its finalization apply. */
async function finish(rt: Runtime, id: string, ok: boolean): Promise<void> {
  await rt.workflow(id).signals.emit('go', { ok });
  expect((await final(rt, id)).state).toBe(ok ? 'completed' : 'failed');
  await rt.maintenance();
}

async function parentTask(rt: Runtime, parent: string): Promise<{ state: string; phase?: string }> {
  const t = await rt.workflow(parent).task('after');
  return { state: t.state, phase: t.wait?.phase };
}

describe(`waiting on other workflows (${backend})`, () => {
  it('all: resumes when every workflow completed; outputs readable by id, in order', async () => {
    const rt = await setup();
    const ids = await jobs(rt, 3);
    const parent = await rt.start('gather_all', { ids });
    await settled(rt, async () => (await parentTask(rt, parent)).phase === 'waiting');
    const status = await rt.workflow(parent).status();
    expect(status.tasks[0].pending_reason).toContain(`done waiting on workflows ${ids.join(', ')}: 0/3 completed`);
    await finish(rt, ids[2], true);
    await finish(rt, ids[0], true);
    expect((await parentTask(rt, parent)).state).toBe('pending');
    await finish(rt, ids[1], true);
    const w = await final(rt, parent);
    expect(w.state).toBe('completed');
    const out = (await rt.workflow(parent).task('after')).output as { results: { id: string; state: string; output: unknown }[] };
    expect(out.results).toEqual(ids.map((id, n) => ({ id, state: 'completed', output: { n } })));
  });

  it('all: fails as soon as one fails; the waiting task is cancelled (on_failure: cancel)', async () => {
    const rt = await setup();
    const ids = await jobs(rt, 3);
    const parent = await rt.start('gather_all', { ids });
    await settled(rt, async () => (await parentTask(rt, parent)).phase === 'waiting');
    await finish(rt, ids[0], true);
    await finish(rt, ids[1], false);
    expect((await final(rt, parent)).state).toBe('failed');
    const t = await rt.workflow(parent).task('after');
    expect(t.state).toBe('cancelled');
    expect(t.errors.at(-1)!.message).toMatch(/waited-on workflows failed: term "done"/);
  });

  it('any: the first fails, the second completes -> resumes; all three fail -> fails', async () => {
    const rt = await setup();
    const ids = await jobs(rt, 3);
    const parent = await rt.start('gather_any', { ids });
    await settled(rt, async () => (await parentTask(rt, parent)).phase === 'waiting');
    await finish(rt, ids[0], false);
    expect((await parentTask(rt, parent)).state).toBe('pending');
    await finish(rt, ids[1], true);
    expect((await final(rt, parent)).state).toBe('completed');

    const more = await jobs(rt, 3);
    const doomed = await rt.start('gather_any', { ids: more });
    await settled(rt, async () => (await parentTask(rt, doomed)).phase === 'waiting');
    await finish(rt, more[0], false);
    await finish(rt, more[1], false);
    expect((await parentTask(rt, doomed)).state).toBe('pending');
    await finish(rt, more[2], false);
    expect((await final(rt, doomed)).state).toBe('failed');
  });

  it('quorum 2 of 3: fails at the moment it becomes impossible, not later', async () => {
    const rt = await setup();
    const ids = await jobs(rt, 3);
    const parent = await rt.start('gather_quorum', { ids });
    await settled(rt, async () => (await parentTask(rt, parent)).phase === 'waiting');
    await finish(rt, ids[0], false);
    expect((await parentTask(rt, parent)).state).toBe('pending');
    await finish(rt, ids[1], false);
    // one still running cannot make two: failed now, while ids[2] still waits
    expect((await final(rt, parent)).state).toBe('failed');
    expect((await rt.workflow(ids[2]).load()).state).toBe('running');

    const more = await jobs(rt, 3);
    const ok = await rt.start('gather_quorum', { ids: more });
    await settled(rt, async () => (await parentTask(rt, ok)).phase === 'waiting');
    await finish(rt, more[1], true);
    await finish(rt, more[2], true);
    expect((await final(rt, ok)).state).toBe('completed');
  });

  it('retrying an awaited workflow changes only the waits still undecided', async () => {
    const rt = await setup();
    const [x, y] = await jobs(rt, 2);
    const decided = await rt.start('gated', { ids: [x] });
    const undecided = await rt.start('gather_all', { ids: [x, y] });
    await settled(rt, async () => (await parentTask(rt, undecided)).phase === 'waiting');
    await finish(rt, x, true);
    const term = async (id: string) => (await rt.workflow(id).task('after')).wait!.last_evaluation!.terms[0];
    expect(await term(decided)).toMatchObject({ outcome: 'satisfied' });
    expect(await term(undecided)).toMatchObject({ outcome: 'undecided', completed: 1 });
    // x runs again: the decided term keeps its outcome, the undecided one sees x running
    await rt.workflow(x).retry({ mode: 'all' });
    await settled(rt, async () => (await rt.workflow(x).task('work')).wait?.phase === 'waiting');
    await finish(rt, y, true);
    expect(await term(undecided)).toMatchObject({ outcome: 'undecided', completed: 1 });
    expect((await rt.workflow(decided).signals.emit('go', {})).resolved).toEqual(['after']);
    expect((await final(rt, decided)).state).toBe('completed');
    await rt.workflow(x).signals.emit('go', { ok: true }, { attempt: 2 });
    await final(rt, x);
    await rt.maintenance();
    expect((await final(rt, undecided)).state).toBe('completed');
  });

  it('a workflow already completed before the wait starts counts at once', async () => {
    const rt = await setup();
    const [id] = await jobs(rt, 1);
    await finish(rt, id, true);
    const parent = await rt.start('gather_all', { ids: [id] });
    expect((await final(rt, parent)).state).toBe('completed');
  });
});
