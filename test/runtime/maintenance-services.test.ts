import { describe, expect, it } from 'vitest';
import { DeadlineService } from '../../src/runtime/maintenance/deadlines.js';
import { PromoterService } from '../../src/runtime/maintenance/promoter.js';
import { SweeperService } from '../../src/runtime/maintenance/sweeper.js';
import { TimerService } from '../../src/runtime/maintenance/timers.js';
import { electLeader, holdsLease, leaseHistory, resignLeader } from '../../src/runtime/sql/leader.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { backend, testRuntime } from '../helpers/runtime.js';

/** Each maintenance service, called by itself with the runtime's context: no leader, no waiting. */
describe(`maintenance services, one runOnce at a time (${backend})`, () => {
  it('the promoter makes a delayed task available when its time comes, and only then', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await testRuntime({ clock: clock.now, leader: false, definitions: { later: 'name: later\ntasks:\n  a: { kind: k, delay: 10m }\n' } });
    const id = await rt.start('later');
    const promoter = new PromoterService(1000);
    expect(await promoter.runOnce(rt.ctx)).toBe(0);
    expect((await rt.workflow(id).task('a')).state).toBe('scheduled');
    clock.advance(10 * 60_000);
    expect(await promoter.runOnce(rt.ctx)).toBe(1);
    expect((await rt.workflow(id).task('a')).state).toBe('available');
  });

  it('the timer service fires a due timer and says when the next one is', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await testRuntime({
      clock: clock.now,
      leader: false,
      definitions: {
        sla:
          'name: sla\ntasks:\n  a:\n    kind: k\n    wait:\n      expr: soon\n      terms:\n        soon: { ' +
          'timer: { after_wait_started: 5m } }\n        late: { timer: { after_wait_started: 1h } }\n',
      },
    });
    const id = await rt.start('sla');
    const next: number[] = [];
    const timers = new TimerService(1000, (at) => next.push(at));
    expect(await timers.runOnce(rt.ctx)).toBe(0);
    expect(next.at(-1)).toBe(clock.now().getTime() + 5 * 60_000);
    clock.advance(5 * 60_000);
    expect(await timers.runOnce(rt.ctx)).toBe(1);
    expect((await rt.workflow(id).task('a')).wait!.phase).toBe('resolved');
  });

  it('the deadline service times a workflow out once, and the sweeper has nothing left to do', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await testRuntime({ clock: clock.now, leader: false, definitions: { brief: 'name: brief\ntimeout: 1m\ntasks:\n  a: { kind: k }\n' } });
    const id = await rt.start('brief');
    const deadlines = new DeadlineService(1000, () => undefined);
    expect(await deadlines.runOnce(rt.ctx)).toBe(0);
    clock.advance(60_000);
    expect(await deadlines.runOnce(rt.ctx)).toBe(1);
    expect(await deadlines.runOnce(rt.ctx)).toBe(0);
    expect(await rt.workflow(id).load()).toMatchObject({ state: 'failed', end_reason: 'timeout' });
    expect(await new SweeperService(1000).runOnce(rt.ctx)).toBe(0);
  });

  it('the lease: one holder at a time; a resignation lapses it at once, and the next leader takes the next epoch', async () => {
    const rt = await testRuntime({ leader: false });
    const { s } = rt.internals;
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const at = (ms: number) => new Date(t0 + ms);
    expect(await electLeader(rt.db, s, 'a', 1000, at(0))).toBe(1);
    expect(await electLeader(rt.db, s, 'b', 1000, at(10))).toBeNull();
    expect(await electLeader(rt.db, s, 'a', 1000, at(500))).toBe(1);
    // only the holder resigns
    await resignLeader(rt.db, s, 'b', at(600));
    expect(await electLeader(rt.db, s, 'b', 1000, at(700))).toBeNull();
    await resignLeader(rt.db, s, 'a', at(800));
    expect(await electLeader(rt.db, s, 'b', 1000, at(900))).toBe(2);
    // an expired lease is taken over too, in the next epoch
    expect(await electLeader(rt.db, s, 'a', 1000, at(3000))).toBe(3);
    // and so on, past epoch 10: the history is in epoch order (a number's, not its text's)
    for (let epoch = 4; epoch <= 12; epoch++) expect(await electLeader(rt.db, s, epoch % 2 ? 'a' : 'b', 1000, at(epoch * 2000))).toBe(epoch);
    const history = (await leaseHistory(rt.db, s)).map((e) => [e.epoch, e.holder, e.elected_at.getTime() - t0, e.expires_at.getTime() - t0]);
    expect(history.slice(0, 3)).toEqual([
      [1, 'a', 0, 800],
      [2, 'b', 900, 1900],
      [3, 'a', 3000, 4000],
    ]);
    expect(history.map(([epoch]) => epoch)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it.runIf(backend === 'postgres')('a leader stalled mid-write holds the lease no longer than its term: the server ends its idle transaction', async () => {
    const rt = await testRuntime({ leader: false });
    const { s } = rt.internals;
    const now = new Date();
    expect(await electLeader(rt.db, s, 'a', 300, now)).toBe(1);
    let resume = () => {};
    const stalled = new Promise<void>((r) => {
      resume = r;
    });
    let locked = () => {};
    const holding = new Promise<void>((r) => {
      locked = r;
    });
    // a's fenced write, its process stalled with the transaction open (the share lock on the lease held)
    const write = rt.db.transaction(async (tx) => {
      const held = await holdsLease(tx, s, 'a', 1, 300);
      locked();
      expect(held).toBe(true);
      await stalled;
      await tx.query('SELECT 1');
    });
    // b's election starts only once a holds the lock (else b may take the expired lease first)
    await holding;
    // b, once a's lease expired, waits for that lock: the server ends a's transaction after 300 ms idle
    expect(await electLeader(rt.db, s, 'b', 300, new Date(now.getTime() + 1000))).toBe(2);
    resume();
    await expect(write).rejects.toThrow();
  });
});
