/**
 * Runs a pass after a quiet period (editors save in bursts: write, rename, chmod), one at a time; a
 * request during a pass makes exactly one more after it, so no change is missed.
 */
export class DebouncedPass {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly quietMs: number,
  ) {}

  schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), this.quietMs);
  }

  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        void this.run();
      }
    });
    return this.running;
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    await this.running;
  }
}
