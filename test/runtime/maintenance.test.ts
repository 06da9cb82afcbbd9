import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { advance, backend, drivenRuntime, final, settle, settled } from '../helpers/runtime.js';

const HOUR = 3_600_000;

describe(`leader maintenance (${backend})`, () => {
  it('workflow-aware retention: finalized workflows vanish as units after their period; running ones never', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      virtualClock: clock,
      handlers: { ok: async () => ({}), fail: async () => Promise.reject(new Error('no')) },
      retention: { closedMs: 24 * HOUR, cancelledMs: 2 * HOUR },
      definitions: {
        done: 'name: done\ntasks:\n  a: { kind: ok }\n  b: { kind: ok, deps: [a] }\n',
        broken: 'name: broken\ntasks:\n  a: { kind: fail, max_attempts: 1 }\n',
        // waits for a signal that never comes: running for as long as the test lasts
        stuck: 'name: stuck\ntasks:\n  a: { kind: ok, wait: { terms: { never: { signal: never } } } }\n',
      },
    });
    await rt.startWorker();
    const done = await rt.start('done');
    const broken = await rt.start('broken');
    const stuck = await rt.start('stuck');
    const cancelled = await rt.start('stuck');
    await rt.workflow(cancelled).cancel();
    for (const id of [done, broken]) await final(rt, id);

    clock.advance(3 * HOUR);
    expect((await rt.maintenance()).deleted).toBe(1);
    await expect(rt.workflow(cancelled).load()).rejects.toThrow(/no workflow/);
    expect((await rt.workflow(done).load()).state).toBe('completed');

    clock.advance(22 * HOUR);
    expect((await rt.maintenance()).deleted).toBe(2);
    for (const id of [done, broken]) await expect(rt.workflow(id).load()).rejects.toThrow(/no workflow/);
    const { rows } = await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".tasks WHERE workflow_id = ANY($1::text[])`, [
      [done, broken, cancelled],
    ]);
    expect(rows[0].n).toBe(0);

    clock.advance(1000 * HOUR);
    await rt.maintenance();
    expect((await rt.workflow(stuck).load()).state).toBe('running');
  });

  it('a finalized workflow goes with its signals, timers, evidence and wait registrations', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      virtualClock: clock,
      leader: false,
      workerDeadAfterMs: 10_000 * HOUR,
      handlers: { ok: async () => ({}) },
      retention: { closedMs: HOUR, cancelledMs: HOUR },
      definitions: {
        other: 'name: other\ntasks:\n  a: { kind: ok }\n',
        waits: `name: waits
inputs: { type: object, properties: { ids: { type: array } }, required: [ids] }
tasks:
  t:
    kind: ok
    wait:
      expr: go || (later && others)
      terms:
        go: { signal: go }
        later: { timer: { after_wait_started: 10m } }
        others: { workflows: { ids: "\${{ inputs.ids }}", mode: all } }
`,
      },
    });
    await rt.startWorker();
    const other = await rt.start('other');
    const id = await rt.start('waits', { ids: [other] });
    await settled(rt, async () => (await rt.workflow(id).task('t')).wait?.phase === 'waiting');
    await rt.workflow(id).signals.emit('go', {});
    await final(rt, id);
    await final(rt, other);
    const count = async (table: string, column = 'workflow_id') =>
      (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".${table} WHERE ${column} = $1`, [id])).rows[0].n;
    expect([await count('signals'), await count('timers')]).toEqual([1, 1]);
    clock.advance(2 * HOUR);
    await rt.maintenance();
    await expect(rt.workflow(id).load()).rejects.toThrow(/no workflow/);
    expect([await count('signals'), await count('timers'), await count('tasks'), await count('workflow_waiters'), await count('effects')]).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });

  it('per-task mode (opt-in) deletes old finalized tasks of running workflows: dependents see a deleted dep', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      virtualClock: clock,
      leader: false,
      workerDeadAfterMs: 10_000 * HOUR,
      handlers: { ok: async () => ({}) },
      retention: { closedMs: null, cancelledMs: null, taskMs: HOUR },
      definitions: {
        pair: `name: pair
tasks:
  a: { kind: ok }
  hold: { kind: ok, wait: { terms: { go: { signal: go } } } }
  strict: { kind: ok, deps: [a, hold] }
  lenient: { kind: ok, deps: [a, hold], ignore_deleted_deps: true }
`,
      },
    });
    await rt.startWorker();
    const id = await rt.start('pair');
    await settled(rt, async () => (await rt.workflow(id).task('a')).state === 'completed');
    clock.advance(30 * 60_000);
    expect((await rt.maintenance()).deleted).toBe(0);
    clock.advance(HOUR);
    expect((await rt.maintenance()).deleted).toBe(1);
    await expect(rt.workflow(id).task('a')).rejects.toThrow(/has no task "a"/);
    expect((await rt.workflow(id).task('strict')).state).toBe('cancelled');
    const lenient = await rt.workflow(id).task('lenient');
    expect(lenient).toMatchObject({ state: 'pending', deps_left: 1 });
    await rt.workflow(id).signals.emit('go', {});
    const w = await final(rt, id);
    expect(w.state).toBe('failed');
    expect((await rt.workflow(id).task('lenient')).state).toBe('completed');
  });

  it('retention can be disabled per state', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      virtualClock: clock,
      leader: false,
      handlers: { ok: async () => ({}) },
      retention: { closedMs: null, cancelledMs: null },
      definitions: { keep: 'name: keep\ntasks:\n  a: { kind: ok }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('keep');
    await final(rt, id);
    clock.advance(10_000 * HOUR);
    expect((await rt.maintenance()).deleted).toBe(0);
    expect((await rt.workflow(id).load()).state).toBe('completed');
  });

  it('scheduled tasks are promoted when their time comes, by the one clock', async () => {
    const clock = new VirtualClock(new Date());
    // a two-hour jump would make the worker look dead (its heartbeat is two hours old): keep it alive here
    const rt = await drivenRuntime({
      virtualClock: clock,
      leader: false,
      workerDeadAfterMs: 1000 * HOUR,
      handlers: { ok: async () => ({ ran: true }) },
      definitions: { delayed: 'name: delayed\ntasks:\n  a: { kind: ok, delay: 2h }\n  b: { kind: ok, deps: [a] }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('delayed');
    expect((await rt.workflow(id).task('a')).state).toBe('scheduled');
    expect((await rt.maintenance()).promoted).toBe(0);
    clock.advance(2 * HOUR + 1);
    expect((await rt.maintenance()).promoted).toBe(1);
    expect((await final(rt, id)).state).toBe('completed');
  });

  it('an attempt whose worker stopped heartbeating is rescued and runs again at once', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      virtualClock: clock,
      workerDeadAfterMs: 30_000,
      // no heartbeat during the test: one landing between the clock's jump and the rescue (a busy machine
      // spaces the two statements by seconds) would stamp the jumped time, and the worker would be alive
      heartbeatIntervalMs: 3_600_000,
      // the first attempt hangs for ten hours and hears no abort; the second returns at once
      handlers: { hang: async (_a, ctx) => (ctx.attempt === 1 ? clock.sleep(10 * HOUR).then(() => ({ late: true })) : { attempt: ctx.attempt }) },
      definitions: { lost: 'name: lost\ntasks:\n  a: { kind: hang, retry: { backoff: constant, initial: 1ms, jitter: false } }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('lost');
    await settled(rt, async () => (await rt.workflow(id).task('a')).state === 'running');
    expect((await rt.maintenance()).rescued).toBe(0);
    clock.advance(60_000);
    expect((await rt.maintenance()).rescued).toBe(1);
    // no backoff after a lost attempt: it is available at once, with no promotion to wait for (the worker
    // is alive after all, and its next heartbeat makes it current again)
    await settle(rt);
    expect((await rt.workflow(id).load()).state).toBe('completed');
    // the lost attempt ends late: its result is not taken
    await advance(rt, 10 * HOUR);
    const task = await rt.workflow(id).task('a');
    expect(task).toMatchObject({ attempt: 2, output: { attempt: 2 } });
    expect(task.errors[0]).toMatchObject({ kind: 'lost', attempt: 1 });
  });
});
