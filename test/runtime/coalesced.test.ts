import { describe, expect, it } from 'vitest';
import { CoalescedPass } from '../../src/pacing/coalesced.js';

describe('a coalesced pass', () => {
  it('runs one pass at a time; requests during a pass share exactly one more pass after it', async () => {
    let passes = 0;
    let release!: () => void;
    const pass = new CoalescedPass(async () => {
      passes++;
      if (passes === 1) await new Promise<void>((r) => (release = r));
      return passes;
    });
    const first = pass.run();
    const second = pass.run();
    const third = pass.run();
    expect(second).toBe(third);
    release();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(passes).toBe(2);
    expect(await pass.run()).toBe(3);
    await pass.settled();
  });

  it('a request made as a pass ends still gets a pass of its own', async () => {
    let passes = 0;
    const pass = new CoalescedPass(async () => ++passes);
    const first = pass.run();
    const late = first.then(() => pass.run());
    expect(await late).toBe(2);
  });
});
