import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/runtime/db/types.js';
import { channels } from '../../src/runtime/sql/channels.js';
import { Arrivals } from '../helpers/arrivals.js';
import { patient } from '../helpers/patience.js';
import { backend, drivenRuntime, testDatabase, testRuntime, until } from '../helpers/runtime.js';

/**
 * The wake-ups follow the state change, whichever statement makes it (migration 015's triggers): a path that
 * forgot to notify would leave its task to the poll, and its waiters to the sweep.
 */
describe(`wake-ups (${backend})`, () => {
  it('an insert wakes its queues from one trigger call per statement, an update to available by any statement wakes its queue; a workflow that ends is announced to its waiters', async () => {
    const rt = await testRuntime({
      definitions: { fan: 'name: fan\ntasks:\n  a: { kind: k, queue: q1 }\n  b: { kind: k, queue: q1 }\n  c: { kind: k, queue: q2 }\n' },
    });
    const ch = channels(rt.schema);
    const wakes = new Arrivals<string>();
    const ends = new Arrivals<string>();
    const woken = wakes.items;
    const ended = ends.items;
    const unlisten = [await rt.db.listen(ch.available, wakes.push), await rt.db.listen(ch.workflow, ends.push)];
    // the start inserts its three tasks in one statement, whose trigger runs once for it (Postgres folds equal
    // notifications of a transaction, so only the trigger's call count tells a statement trigger from a row one)
    const { id, calls } = await rt.db.transaction(async (tx) => {
      await tx.query("SET LOCAL track_functions = 'all'");
      const id = await rt.start('fan', {}, { tx });
      const { rows } = await tx.query<{ calls: number }>(
        "SELECT calls::int FROM pg_stat_xact_user_functions WHERE schemaname = $1 AND funcname = 'tasks_inserted_wake'",
        [rt.schema],
      );
      return { id, calls: rows[0]?.calls };
    });
    expect(calls).toBe(1);
    await wakes.when((w) => w.length >= 2);
    expect(woken.sort()).toEqual(['q1', 'q2']);

    // a statement braid's code never runs: the trigger still wakes the queue
    woken.length = 0;
    await rt.db.query(`UPDATE "${rt.schema}".tasks SET state = 'scheduled' WHERE workflow_id = $1 AND name = 'c'`, [id]);
    await rt.db.query(`UPDATE "${rt.schema}".tasks SET state = 'available' WHERE workflow_id = $1 AND name = 'c'`, [id]);
    await wakes.when((w) => w.length >= 1);
    expect(woken).toEqual(['q2']);

    // an end is announced to those who wait for it (migration 044): this one nobody waits for, the next one a
    // waiter watches; notifications arrive in commit order, so the first would be seen before the second
    await rt.workflow(id).cancel();
    const watchedId = await rt.start('fan');
    const final = rt.workflow(watchedId).waitUntilFinal({ pollMs: 60_000 });
    await until(
      async () => (await rt.db.query<{ watched: boolean }>(`SELECT watched FROM "${rt.schema}".workflows WHERE id = $1`, [watchedId])).rows[0].watched,
    );
    await rt.workflow(watchedId).cancel();
    await ends.when((e) => e.length >= 1);
    expect(ended).toEqual([`${watchedId} cancelled`]);
    expect((await final).state).toBe('cancelled');
    for (const u of unlisten) await u();
  });

  it('with polling every minute, a chain, a signal, a child and its parent move on notifications alone', { timeout: patient(90_000) }, async () => {
    const rt = await testRuntime({
      pollIntervalMs: 60_000,
      definitions: {
        child: 'name: child\ntasks:\n  c: { kind: ok }\n',
        parent: [
          'name: parent',
          'tasks:',
          '  a: { kind: ok }',
          '  b: { kind: ok, deps: [a] }',
          '  w: { kind: ok, deps: [b], wait: { terms: { go: { signal: go } } } }',
          '  kids: { deps: [w], start: { workflow: child } }',
          '  after: { kind: ok, deps: [kids] }',
          '',
        ].join('\n'),
      },
      handlers: { ok: async () => ({}) },
    });
    await rt.startWorker();
    const id = await rt.start('parent');
    await until(async () => (await rt.workflow(id).task('w')).wait?.phase === 'waiting');
    await rt.workflow(id).signals.emit('go', {});
    // a wake-up lost waits for the minute's poll: then say which task it left where (the parent's, the child's)
    const w = await rt
      .workflow(id)
      .waitUntilFinal({ timeoutMs: patient(30_000), pollMs: 50 })
      .catch(async (error: Error) => {
        const children = (await rt.listWorkflows({ parentId: id })).workflows;
        const where = await Promise.all(
          [id, ...children.map((c) => c.id)].map(async (wid) =>
            (await rt.workflow(wid).tasks()).map((t) => `${wid.slice(-6)}.${t.name}: ${t.state}`).join(', '),
          ),
        );
        throw new Error(`${error.message}: ${where.join('; ')}`);
      });
    expect(w.state).toBe('completed');
  });

  it('a wake-up that comes while a claim is in flight, which then finds nothing, asks for another claim (no poll needed)', async () => {
    const base = await testDatabase();
    // the worker's claims go through here: the first one, once armed, is held after it ran (its snapshot taken, nothing found)
    let armed = false;
    let inFlight!: () => void;
    const claimRan = new Promise<void>((r) => (inFlight = r));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const database = new Proxy(base, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<Database['query']>) => {
          const result = await target.query(...args);
          if (armed && typeof args[0] === 'string' && args[0].includes('.claim(')) {
            armed = false;
            inFlight();
            await held;
          }
          return result;
        };
      },
    }) as Database;
    let ran!: () => void;
    const done = new Promise<void>((r) => (ran = r));
    const rt = await drivenRuntime({ database, definitions: { one: 'name: one\ntasks:\n  t: { kind: ok }\n' }, handlers: { ok: async () => ran() } });
    // told after the worker (listeners are called in the order they listened)
    let heard!: () => void;
    const notified = new Promise<void>((r) => (heard = r));
    armed = true;
    await rt.startWorker();
    await base.listen(channels(rt.schema).available, () => heard());
    await claimRan;
    await rt.start('one');
    await notified;
    release();
    await Promise.race([
      done,
      new Promise((_, reject) => setTimeout(() => reject(new Error('the wake-up was lost: no claim after the empty one')), patient(10_000)).unref()),
    ]);
  });
});
