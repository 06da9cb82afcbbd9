import { describe, expect, it } from 'vitest';
import { clockNow } from '../../src/runtime/core/context.js';
import { type Completion, completeTasks } from '../../src/runtime/sql/complete.js';
import { fetchTasks } from '../../src/runtime/sql/fetch.js';
import { backend, testRuntime } from '../helpers/runtime.js';

// Completions find a claimed row by the address the claim returned, and by key when the row moved since.
describe(`completion by claimed row address (${backend})`, () => {
  const definitions = { pair: 'name: pair\ntasks:\n  a: { kind: k }\n  b: { kind: k }\n  c: { kind: k, deps: [a, b] }\n' };

  async function claimed() {
    const rt = await testRuntime({ definitions });
    const id = await rt.start('pair');
    const { s } = rt.internals;
    const { tasks } = await fetchTasks(rt.db, s, { queue: 'default', kinds: ['k'], limit: 10, workerId: 'w1', now: new Date() });
    expect(tasks.map((t) => t.name).sort()).toEqual(['a', 'b']);
    for (const t of tasks) expect(t.tid).toMatch(/^\(\d+,\d+\)$/);
    const completion = (name: string, output: unknown): Completion => {
      const t = tasks.find((x) => x.name === name)!;
      return { workflowId: id, name, attempt: t.attempt, workerId: 'w1', output, dependents: t.dependents, tid: t.tid };
    };
    return { rt, id, s, completion };
  }

  it('completes at the claimed address, and by key a row that moved after its claim', async () => {
    const { rt, id, s, completion } = await claimed();
    // an update after the claim (as a cancel request makes) moves the row to a new version
    await rt.db.query(`UPDATE ${s}.tasks SET metadata = '{"touched": true}' WHERE workflow_id = $1 AND name = 'b'`, [id]);
    // at the runtime's clock, which the start wrote c's time by: the host's may be a few ms behind the database's
    const result = await completeTasks(rt.db, rt.advanceContext(await clockNow(rt.internals)), [completion('a', { n: 1 }), completion('b', { n: 2 })]);
    expect(result.skipped).toEqual([]);
    const w = rt.workflow(id);
    expect(await w.task('a')).toMatchObject({ state: 'completed', output: { n: 1 } });
    expect(await w.task('b')).toMatchObject({ state: 'completed', output: { n: 2 } });
    expect((await w.task('c')).state).toBe('available');
  });

  it('a late or duplicate completion is a no-op, whether or not its address still holds the row', async () => {
    const { rt, id, completion } = await claimed();
    const ctx = rt.advanceContext(await clockNow(rt.internals));
    expect((await completeTasks(rt.db, ctx, [completion('a', 1)])).skipped).toEqual([]);
    const late = [completion('a', 2), { ...completion('b', 3), attempt: 7 }];
    expect((await completeTasks(rt.db, ctx, late)).skipped).toEqual(late);
    const w = rt.workflow(id);
    expect(await w.task('a')).toMatchObject({ state: 'completed', output: 1 });
    expect((await w.task('b')).state).toBe('running');
    expect((await w.task('c')).state).toBe('pending');
  });
});
