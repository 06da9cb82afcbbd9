/**
 * Runs a pass at most once at a time. A request while one runs is answered by one more pass after it (shared
 * by every request made meanwhile), so whatever changed during the running pass is not missed.
 */
export class CoalescedPass<T = number> {
  private running?: Promise<T>;
  private next?: Promise<T>;

  constructor(private readonly pass: () => Promise<T>) {}

  run(): Promise<T> {
    if (this.running) {
      this.next ??= this.running
        .catch(() => undefined)
        .then(() => {
          this.next = undefined;
          return this.run();
        });
      return this.next;
    }
    this.running = this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Waits for the passes in progress or asked for, if any (at shutdown). */
  async settled(): Promise<void> {
    await this.next?.catch(() => undefined);
    await this.running?.catch(() => undefined);
  }
}
