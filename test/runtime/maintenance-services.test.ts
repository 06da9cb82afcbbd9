import { describe, expect, it } from 'vitest';
import { DeadlineService } from '../../src/runtime/maintenance/deadlines.js';
import { PromoterService } from '../../src/runtime/maintenance/promoter.js';
import { SweeperService } from '../../src/runtime/maintenance/sweeper.js';
import { TimerService } from '../../src/runtime/maintenance/timers.js';
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
});
