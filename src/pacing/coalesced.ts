/**
 * Runs a pass at most once at a time. A request while one runs is answered by one more pass after it (shared
 * by every request made meanwhile), so whatever changed during the running pass is not missed. A pass gets the
 * argument of the latest request (a leader's pass, its current lease).
 */
export class CoalescedPass<T = number, A = void> {
  private running?: Promise<T>;
  private next?: Promise<T>;
  private latest?: A;

  constructor(private readonly pass: (arg: A) => Promise<T>) {}

  run(arg: A): Promise<T> {
    this.latest = arg;
    if (this.running) {
      this.next ??= this.running
        .catch(() => undefined)
        .then(() => {
          this.next = undefined;
          return this.run(this.latest as A);
        });
      return this.next;
    }
    this.running = this.pass(arg).finally(() => (this.running = undefined));
    return this.running;
  }

  /** Waits for the passes in progress or asked for, if any (at shutdown). */
  async settled(): Promise<void> {
    await this.next?.catch(() => undefined);
    await this.running?.catch(() => undefined);
  }
}
