import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import { completeTasks } from '../../src/runtime/sql/complete.js';
import { type ClaimedJson, decodeClaimed, type FetchedTask, fetchTasks } from '../../src/runtime/sql/fetch.js';
import { quoteIdent } from '../../src/runtime/sql/schema.js';
import { backend, drivenRuntime, final } from '../helpers/runtime.js';

// A start writes the alike items of a for_each that nothing depends on as a range (migration 049); a claim splits
// a running range off its front, and a completion fills in its items' outputs. Every reader and every other path
// sees the items as rows would be (task-ranges.test.ts holds the readers to it).
const MAP = `name: map
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  leaf: { kind: leaf, for_each: "\${{ inputs.items }}", args: { n: "\${{ item }}" } }
output: { results: "\${{ tasks.leaf.map(x, x.output) }}", states: "\${{ tasks.leaf.map(x, x.state) }}" }
`;
const URGENT = 'name: urgent\ntasks:\n  u: { kind: leaf, priority: 1, args: { n: -1 } }\n';

const items = Array.from({ length: 40 }, (_, n) => n);

async function ranges(rt: Runtime, id: string) {
  const { rows } = await rt.db.query<{ lo: number; hi: number; state: string; worker_id: string | null }>(
    `SELECT lo, hi, state, worker_id FROM ${quoteIdent(rt.schema)}.task_ranges WHERE workflow_id = $1 ORDER BY lo`,
    [id],
  );
  return rows;
}

const rowCount = async (rt: Runtime, id: string) =>
  (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoteIdent(rt.schema)}.tasks WHERE workflow_id = $1`, [id])).rows[0].n;

describe(`ranges claimed and completed as ranges (${backend})`, () => {
  it('a start writes one range; workers run its items from running ranges, and every item reads as a row would', async () => {
    const runs: number[] = [];
    const rt = await drivenRuntime({ definitions: { map: MAP }, handlers: { leaf: async (args: { n: number }) => (runs.push(args.n), args.n * 10) } });
    const id = await rt.start('map', { items });
    expect(await ranges(rt, id)).toEqual([{ lo: 0, hi: 40, state: 'available', worker_id: null }]);
    expect(await rowCount(rt, id)).toBe(0);
    await rt.startWorker();
    const w = await final(rt, id);
    expect(w.state).toBe('completed');
    expect(runs.sort((a, b) => a - b)).toEqual(items);
    expect(w.output).toEqual({ results: items.map((n) => n * 10), states: items.map(() => 'completed') });
    // the items stayed ranged, each read completed with its output, in their order
    expect(await rowCount(rt, id)).toBe(0);
    expect((await ranges(rt, id)).every((r) => r.state === 'completed' && r.worker_id === null)).toBe(true);
    const tasks = await rt.workflow(id).tasks();
    expect(tasks.map((t) => t.name)).toEqual(items.map((n) => `leaf[${n}]`));
    expect(tasks.every((t) => t.state === 'completed' && t.attempt === 1 && t.finalized_at !== null)).toBe(true);
    expect(await rt.workflow(id).output('leaf[7]')).toBe(70);
  });

  it('a claim splits a running range off the front, in the queue order with rows; completions fill it; a failed item gets its row and retries', async () => {
    const rt = await drivenRuntime({ definitions: { map: MAP, urgent: URGENT }, handlers: { leaf: async (args: { n: number }) => args.n * 10 } });
    const s = quoteIdent(rt.schema);
    const id = await rt.start('map', { items });
    const urgent = await rt.start('urgent', {});
    const claimed = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['leaf'], limit: 10, workerId: 'w1', now: new Date() });
    // the urgent row first (its priority), then the range's first nine items
    expect(claimed.tasks.map((t) => `${t.workflow_id === urgent ? 'u' : t.name}:${JSON.stringify(t.args)}`)).toEqual([
      'u:{"n":-1}',
      ...Array.from({ length: 9 }, (_, n) => `leaf[${n}]:{"n":${n}}`),
    ]);
    expect(await ranges(rt, id)).toEqual([
      { lo: 0, hi: 9, state: 'running', worker_id: 'w1' },
      { lo: 9, hi: 40, state: 'available', worker_id: null },
    ]);
    const ranged = claimed.tasks.filter((t) => t.workflow_id === id);
    const ctx = { s, schema: rt.schema, now: new Date() };
    const done = await completeTasks(
      rt.db,
      ctx,
      ranged.slice(0, 5).map((t) => completion(t, t.name === 'leaf[3]' ? { late: true } : 1)),
    );
    expect(done.skipped).toEqual([]);
    // a second completion of a finished item, or one by another worker, takes no effect
    const again = await completeTasks(rt.db, ctx, [completion(ranged[0], 2), { ...completion(ranged[6], 2), workerId: 'w2' }]);
    expect(again.skipped.map((i) => i.name)).toEqual(['leaf[0]', 'leaf[6]']);
    expect((await rt.workflow(id).task('leaf[3]')).state).toBe('completed');
    expect(await rt.workflow(id).output('leaf[3]')).toEqual({ late: true });
    expect((await rt.workflow(id).task('leaf[6]')).state).toBe('running');
    // a failure ends through the lock every writer takes: the workflow's items get rows, and the item retries
    const { rows } = await rt.db.query<{ state: string }>(
      `SELECT ${s}.end_attempt($1, 'leaf[6]', 1, 'w1', 'error', '{"message": "boom"}', NULL, now()) AS state`,
      [id],
    );
    expect(rows[0].state).toBe('retryable');
    expect(await ranges(rt, id)).toEqual([]);
    expect(await rowCount(rt, id)).toBe(40);
    // the rest completes by key, as rows
    const rest = await completeTasks(rt.db, ctx, [completion(ranged[7], 7)]);
    expect(rest.skipped).toEqual([]);
    expect(await rt.workflow(id).output('leaf[7]')).toBe(7);
  });

  it("a claim that returns its running ranges reads as the protocol's claim of each item: every field of every task, and the claim's record", async () => {
    const def = MAP.replace('args: { n: "${{ item }}" } }', 'args: { n: "${{ item }}" }, timeout: 30s, max_attempts: 3 }');
    const rt = await drivenRuntime({ definitions: { map: def, urgent: URGENT }, handlers: { leaf: async () => null } });
    const s = quoteIdent(rt.schema);
    const varied = Array.from({ length: 150 }, (_, n) => [{ deep: { n, s: 'é"\\' } }, `s${n}`, null, [n, true]][n % 4]);
    const id = await rt.start('map', { items: varied });
    await rt.start('urgent', {});
    class Rollback {
      constructor(readonly value: { tasks: FetchedTask[]; names: string[] }) {}
    }
    // each way in a transaction rolled back, so both claim the same queue: 130 items split into three running ranges
    const claim = async (take: (tx: Parameters<Parameters<typeof rt.db.transaction>[0]>[0]) => Promise<FetchedTask[]>) => {
      try {
        await rt.db.transaction(async (tx) => {
          const tasks = await take(tx);
          const names = (await tx.query<{ names: string[] }>(`SELECT names FROM ${s}.claims`)).rows[0].names;
          throw new Rollback({ tasks, names });
        });
      } catch (e) {
        if (e instanceof Rollback) return e.value;
        throw e;
      }
      throw new Error('not rolled back');
    };
    const compact = await claim(
      async (tx) => (await fetchTasks(tx, s, { queue: 'default', kinds: ['leaf'], limit: 131, workerId: 'w1', now: new Date(0) })).tasks,
    );
    const oneByOne = await claim(async (tx) => {
      const { rows } = await tx.query<{ tasks: ClaimedJson[]; ranges: unknown }>(
        `SELECT tasks, ranges FROM ${s}.claim('default', '{leaf}', 131, 'w1', $1, '{}', 0, NULL, NULL)`,
        [new Date(0)],
      );
      expect(rows[0].ranges).toBeNull();
      return decodeClaimed(rows[0].tasks);
    });
    expect(compact.tasks).toHaveLength(131);
    expect(compact.tasks.filter((t) => t.workflow_id === id).map((t) => t.args)).toEqual(varied.slice(0, 130).map((n) => ({ n })));
    // (a row's address is where its claimed version went, which differs between the two rolled-back claims)
    const byName = (tasks: FetchedTask[]) =>
      tasks
        .map((t) => ({ ...t, tid: t.tid.startsWith('r') ? t.tid : 'a row' }))
        .sort((a, b) => a.name.localeCompare(b.name) || a.workflow_id.localeCompare(b.workflow_id));
    expect(byName(compact.tasks)).toStrictEqual(byName(oneByOne.tasks));
    expect([...compact.names].sort()).toEqual([...oneByOne.names].sort());
    expect(new Set(compact.tasks.map((t) => t.tid)).size).toBe(131);
  });

  it('a paused queue or workflow holds its ranges as it holds rows', async () => {
    const rt = await drivenRuntime({ definitions: { map: MAP }, handlers: { leaf: async (args: { n: number }) => args.n } });
    const s = quoteIdent(rt.schema);
    const id = await rt.start('map', { items });
    const claim = () => fetchTasks(rt.db, s, { queue: 'default', kinds: ['leaf'], limit: 5, workerId: 'w1', now: new Date() });
    await rt.pauses.pause('workflow', 'map');
    expect((await claim()).tasks).toEqual([]);
    await rt.pauses.resume('workflow', 'map');
    await rt.pauses.pause('queue', 'default');
    expect((await claim()).tasks).toEqual([]);
    await rt.pauses.resume('queue', 'default');
    expect((await claim()).tasks.length).toBe(5);
    expect(await ranges(rt, id)).toHaveLength(2);
  });
});

function completion(t: { workflow_id: string; name: string; attempt: number; tid: string; dependents: string[] }, output: unknown) {
  return { workflowId: t.workflow_id, name: t.name, attempt: t.attempt, workerId: 'w1', output, tid: t.tid, dependents: t.dependents };
}
