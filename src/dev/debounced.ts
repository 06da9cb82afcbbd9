import { CoalescedPass } from '../pacing/coalesced.js';

/**
 * Runs a pass after a quiet period (editors save in bursts: write, rename, chmod), one at a time; a
 * request during a pass makes exactly one more after it, so no change is missed.
 */
export class DebouncedPass {
  private timer?: NodeJS.Timeout;
  private readonly passes: CoalescedPass<void>;

  constructor(
    pass: () => Promise<void>,
    private readonly quietMs: number,
  ) {
    this.passes = new CoalescedPass(pass);
  }

  schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), this.quietMs);
  }

  run(): Promise<void> {
    return this.passes.run();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    await this.passes.settled();
  }
}
