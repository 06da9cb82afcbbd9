import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/testing/virtual-clock.js';

describe('VirtualClock', () => {
  it('wakes sleepers in time order as it moves, never back', async () => {
    const clock = new VirtualClock(new Date(0));
    const woke: number[] = [];
    const a = clock.sleep(300).then(() => woke.push(300));
    const b = clock.sleep(100).then(() => woke.push(100));
    expect(clock.sleeping).toBe(2);
    expect(clock.nextWake()).toEqual(new Date(100));
    clock.set(new Date(150));
    await b;
    expect(woke).toEqual([100]);
    clock.set(new Date(50));
    expect(clock.now()).toEqual(new Date(150));
    clock.advance(150);
    await a;
    expect(woke).toEqual([100, 300]);
    expect(clock.sleeping).toBe(0);
  });

  it('an aborted sleep rejects with the reason at once and no longer holds the clock', async () => {
    const clock = new VirtualClock(new Date(0));
    const controller = new AbortController();
    const sleeping = clock.sleep(60_000, controller.signal);
    clock.sleep(10);
    expect(clock.sleeping).toBe(2);
    controller.abort(new Error('cancelled'));
    await expect(sleeping).rejects.toThrow('cancelled');
    expect(clock.sleeping).toBe(1);
    expect(clock.nextWake()).toEqual(new Date(10));
    // already aborted: no sleep at all
    await expect(clock.sleep(5, controller.signal)).rejects.toThrow('cancelled');
    expect(clock.sleeping).toBe(1);
  });
});
