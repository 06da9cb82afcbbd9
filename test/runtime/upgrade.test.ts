import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, definitionsDir, drivenRuntime, final, settled } from '../helpers/runtime.js';

const V1 = `name: flow
tasks:
  a: { kind: k }
  review:
    kind: k
    deps: [a]
    wait: { terms: { ok: { signal: review } } }
  settle: { kind: old_settle, deps: [review], args: { v: 1 } }
  cleanup: { kind: k, deps: [settle] }
`;

// review is renamed (and waits on another key), settle gets a new kind and args, cleanup goes, notify comes
const V2 = `name: flow
tasks:
  a: { kind: k }
  approve:
    kind: k
    renamed_from: review
    deps: [a]
    wait: { terms: { ok: { signal: approved } } }
  settle: { kind: new_settle, deps: [approve], args: { v: 2 } }
  notify: { kind: k, deps: [settle] }
`;

function recording() {
  const runs: { workflow: string; task: string; kind: string; args: unknown }[] = [];
  const record = (kind: string) => async (args: unknown, ctx: { workflowId: string; taskName: string }) => (
    runs.push({ workflow: ctx.workflowId, task: ctx.taskName, kind, args }), { kind }
  );
  const handlers: Handlers = { k: record('k'), old_settle: record('old_settle'), new_settle: record('new_settle') };
  return { runs, handlers };
}

async function register(rt: Runtime, yaml: string): Promise<string> {
  const r = await rt.registerDefinitions(definitionsDir({ flow: yaml }));
  if (r.validation.errors > 0) throw new Error(r.validation.diagnostics.map((d) => d.message).join('; '));
  return r.validation.definitions[0].hash;
}

const waiting = (rt: Runtime, id: string, task: string) => async () => (await rt.workflow(id).task(task)).wait?.phase === 'waiting';

describe(`moving running workflows to another version (${backend})`, () => {
  it(
    'a waiting workflow moves: the started task is kept, the renamed one waits on the new terms with the signals ' +
      'already received, new tasks run, removed ones are gone, the move is recorded',
    async () => {
      const { runs, handlers } = recording();
      const rt = await drivenRuntime({ handlers });
      const v1 = await register(rt, V1);
      await rt.startWorker();
      const id = await rt.start('flow');
      await settled(rt, waiting(rt, id, 'review'));
      // the new version's key, sent before the move (no task waits on it yet): a signal already received
      await rt.workflow(id).signals.emit('approved', { by: 'ada' }, { anyKey: true });
      const v2 = await register(rt, V2);
      expect((await rt.versions('flow')).map((v) => [v.hash, v.state, v.running])).toEqual([
        [v2, 'current', 0],
        [v1, 'draining', 1],
      ]);
      const dry = await rt.upgrade('flow', { dryRun: true });
      expect(dry).toEqual({
        name: 'flow',
        to: v2,
        results: [
          {
            id,
            from: v1,
            to: v2,
            status: 'would_move',
            renamed: { review: 'approve' },
            inserted: ['notify'],
            deleted: ['cleanup'],
            history: [],
            cancelled: [],
          },
        ],
      });
      expect((await rt.workflow(id).load()).definition_hash).toBe(v1);
      const report = await rt.upgrade('flow');
      expect(report.results).toEqual([{ ...dry.results[0], status: 'moved' }]);
      const w = await final(rt, id);
      expect(w).toMatchObject({ state: 'completed', definition_hash: v2, tasks_total: 4 });
      expect(runs.map((r) => `${r.task}:${r.kind}`)).toEqual(['a:k', 'approve:k', 'settle:new_settle', 'notify:k']);
      expect(runs.find((r) => r.task === 'settle')!.args).toEqual({ v: 2 });
      const status = await rt.workflow(id).status();
      expect(status.tasks.map((t) => t.name)).toEqual(['a', 'approve', 'settle', 'notify']);
      expect(status.upgrades).toEqual([{ from: v1, to: v2, at: expect.any(Date) }]);
      expect((await rt.workflow(id).task('approve')).wait?.evidence?.terms[0]).toMatchObject({ name: 'ok', value: true });
      expect((await rt.versions('flow')).map((v) => v.state)).toEqual(['current', 'drained']);
      // moved already: a second upgrade has nothing to do
      expect((await rt.upgrade('flow')).results).toEqual([]);
      expect(await rt.workflow(id).upgrade()).toEqual({ id, from: v2, to: v2, status: 'current' });
    },
  );

  it('a workflow that cannot move is left as it was, with the reason; the others move', async () => {
    const { handlers } = recording();
    const rt = await drivenRuntime({ handlers });
    await register(rt, V1);
    await rt.startWorker();
    const done = await rt.start('flow');
    await settled(rt, waiting(rt, done, 'review'));
    await rt.stop(1000);
    const fresh = await rt.start('flow');
    // the target runs `a`, which the first workflow already ran, as another kind
    const v3 = await register(rt, V1.replace('  a: { kind: k }\n', '  a: { kind: other }\n'));
    const before = await rt.workflow(done).tasks();
    const report = await rt.upgrade('flow');
    expect(report.results.find((r) => r.id === done)).toMatchObject({
      status: 'skipped',
      reason: 'task "a" is completed with kind k, and the version to move to runs it as kind other',
    });
    expect(report.results.find((r) => r.id === fresh)).toMatchObject({ status: 'moved', renamed: {}, inserted: [], deleted: [] });
    expect((await rt.workflow(fresh).load()).definition_hash).toBe(v3);
    const after = await rt.workflow(done).tasks();
    expect(after.map(({ name, state, kind, deps }) => ({ name, state, kind, deps }))).toEqual(
      before.map(({ name, state, kind, deps }) => ({ name, state, kind, deps })),
    );
    expect((await rt.workflow(done).status()).upgrades).toEqual([]);
    // filters: only the given ids, only from a version (prefixes as braid versions shows them)
    expect((await rt.upgrade('flow', { ids: [done, 'nope'], dryRun: true })).results.map((r) => [r.id, r.status, r.reason?.slice(0, 22)])).toEqual([
      [done, 'skipped', 'task "a" is completed '],
      ['nope', 'skipped', 'no such workflow'],
    ]);
    expect((await rt.upgrade('flow', { from: v3.slice(0, 12), dryRun: true })).results).toEqual([]);
    await expect(rt.upgrade('flow', { to: 'abc' })).rejects.toMatchObject({ code: 'definition_not_found' });
    await expect(rt.upgrade('nope')).rejects.toMatchObject({ code: 'workflow_not_registered' });
  });

  it('a wait evaluated again keeps its start: its timers keep their anchor; a for_each keeps its expansions by key and they take the new args', async () => {
    const timed = (after: string, tag: string) => `name: flow
inputs: { type: object, properties: { items: { type: array, default: [x, y] } } }
tasks:
  gate:
    kind: k
    wait: { expr: go || sla, terms: { go: { signal: go }, sla: { timer: { after_wait_started: ${after} } } } }
  ship: { kind: k, deps: [gate], for_each: "\${{ inputs.items }}", key: "\${{ item }}", args: { item: "\${{ item }}", tag: ${tag} } }
`;
    const { runs, handlers } = recording();
    const rt = await drivenRuntime({ handlers });
    await register(rt, timed('1h', 'one'));
    const id = await rt.start('flow');
    const timer = async () =>
      (await rt.db.query<{ fire_at: Date }>(`SELECT fire_at FROM "${rt.schema}".timers WHERE workflow_id = $1`, [id])).rows.map((r) =>
        new Date(r.fire_at).getTime(),
      );
    const started = new Date((await rt.workflow(id).task('gate')).wait!.started_at!).getTime();
    expect(await timer()).toEqual([started + 3_600_000]);
    await register(rt, timed('2h', 'two'));
    expect((await rt.upgrade('flow')).results[0]).toMatchObject({ status: 'moved', inserted: [], deleted: [] });
    expect(await timer()).toEqual([started + 7_200_000]);
    expect(new Date((await rt.workflow(id).task('gate')).wait!.started_at!).getTime()).toBe(started);
    await rt.startWorker();
    await rt.workflow(id).signals.emit('go', {});
    await final(rt, id);
    expect(
      runs
        .filter((r) => r.task.startsWith('ship'))
        .map((r) => [r.task, r.args])
        .sort(),
    ).toEqual([
      ['ship[x]', { item: 'x', tag: 'two' }],
      ['ship[y]', { item: 'y', tag: 'two' }],
    ]);
  });

  it(
    'repair: runs a when: typo discarded are retried on the fixed current version (retry onCurrent) ' +
      'and complete; a plain retry says the version is not current',
    async () => {
      const broken = `name: flow
tasks:
  score: { kind: k }
  decide: { kind: k, deps: [score], when: 'deps["score"].output.kidn == "k"' }
  after: { kind: k, deps: [decide] }
`;
      const { runs, handlers } = recording();
      const rt = await drivenRuntime({ handlers });
      const v1 = await register(rt, broken);
      await rt.startWorker();
      const id = await rt.start('flow');
      expect(await final(rt, id)).toMatchObject({ state: 'failed' });
      expect((await rt.workflow(id).task('decide')).state).toBe('discarded');
      const v2 = await register(rt, broken.replace('kidn', 'kind'));
      // a plain retry runs the pinned version again, and says it is not the current one
      const plain = await rt.workflow(id).retry({ mode: 'failed_only' });
      expect({ ...plain, retried: plain.retried.sort() }).toMatchObject({ attempt: 2, retried: ['after', 'decide'], version: v1, current: v2 });
      expect(await final(rt, id)).toMatchObject({ state: 'failed' });
      const repaired = await rt.workflow(id).retry({ mode: 'failed_only', onCurrent: true });
      expect({ ...repaired, retried: repaired.retried.sort() }).toMatchObject({ attempt: 3, retried: ['after', 'decide'], version: v2, current: v2 });
      expect(await final(rt, id)).toMatchObject({ state: 'completed', definition_hash: v2 });
      expect(runs.map((r) => r.task)).toEqual(['score', 'decide', 'after']);
      expect((await rt.workflow(id).status()).upgrades.map((u) => [u.from, u.to])).toEqual([[v1, v2]]);
    },
  );

  it('under a running worker, many workflows move while their tasks complete: none lost or doubled, each on one version', async () => {
    const chain = (v: number, extra = '') => `name: flow
tasks:
  a: { kind: slow }
  b: { kind: slow, deps: [a], args: { v: ${v} } }
  c: { kind: slow, deps: [b], args: { v: ${v} } }
${extra}`;
    const { runs, handlers } = recording();
    const slow: Handlers = { ...handlers, slow: async (a, ctx) => (await new Promise((r) => setTimeout(r, 20)), handlers.k(a, ctx)) };
    const rt = await drivenRuntime({ handlers: slow });
    const v1 = await register(rt, chain(1));
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(await rt.start('flow'));
    await rt.startWorker();
    const v2 = await register(rt, chain(2, '  d: { kind: k, deps: [c] }\n'));
    const report = await rt.upgrade('flow');
    for (const id of ids) await final(rt, id);
    const moved = new Set(report.results.filter((r) => r.status === 'moved').map((r) => r.id));
    expect(moved.size).toBeGreaterThan(0);
    for (const id of ids) {
      const w = await rt.workflow(id).load();
      expect(w.state).toBe('completed');
      const names = (await rt.workflow(id).tasks()).map((t) => t.name);
      expect(w.definition_hash).toBe(moved.has(id) ? v2 : v1);
      expect(names).toEqual(moved.has(id) ? ['a', 'b', 'c', 'd'] : ['a', 'b', 'c']);
      // every task ran once, in order, nothing lost or doubled by the move; a task that had not started took the new args
      const mine = runs.filter((r) => r.workflow === id);
      expect(mine.map((r) => r.task)).toEqual(names);
      expect(mine.find((r) => r.task === 'c')!.args).toEqual((await rt.workflow(id).task('c')).args);
    }
    expect(runs.some((r) => moved.has(r.workflow) && r.task === 'c' && (r.args as { v: number }).v === 2)).toBe(true);
    // a workflow that completed between the listing and its turn is left as it is, and says so (not as a refusal)
    for (const r of report.results.filter((x) => x.status !== 'moved'))
      expect(r).toMatchObject({ status: 'finished', reason: 'it ended completed before its turn' });
  });
});
