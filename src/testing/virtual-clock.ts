/**
 * The clock a workflow test runs on: the runtime reads it (RuntimeContext's clock) for every decision, and it
 * only moves when the runner moves it. Handlers mocked with a `delay` sleep on it, so virtual time passes for
 * them too: they wake when the clock reaches their time.
 */
export class VirtualClock {
  private at: number;
  private readonly sleepers: { at: number; wake: () => void }[] = [];

  constructor(start: Date) {
    this.at = start.getTime();
  }

  /** The runtime's clock. */
  readonly now = (): Date => new Date(this.at);

  /**
   * Resolves when the clock has moved `ms` on; rejects with the signal's reason when it aborts first (a
   * cancelled task), and sleeps no longer: an aborted sleeper neither counts as asleep nor pulls the clock on.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise((wake, fail) => {
      const sleeper = {
        at: this.at + ms,
        wake: () => {
          signal?.removeEventListener('abort', abort);
          wake();
        },
      };
      const abort = () => {
        const i = this.sleepers.indexOf(sleeper);
        if (i >= 0) this.sleepers.splice(i, 1);
        fail(signal!.reason);
      };
      signal?.addEventListener('abort', abort, { once: true });
      this.sleepers.push(sleeper);
    });
  }

  /** Handlers asleep on this clock. */
  get sleeping(): number {
    return this.sleepers.length;
  }

  /** When the first sleeper wakes. */
  nextWake(): Date | null {
    return this.sleepers.length === 0 ? null : new Date(Math.min(...this.sleepers.map((s) => s.at)));
  }

  /** Moves the clock `ms` forward. */
  advance(ms: number): void {
    this.set(new Date(this.at + ms));
  }

  /** Moves the clock forward to `to` (never back), waking the sleepers whose time has come. */
  set(to: Date): void {
    this.at = Math.max(this.at, to.getTime());
    for (const s of [...this.sleepers]) {
      if (s.at > this.at) continue;
      this.sleepers.splice(this.sleepers.indexOf(s), 1);
      s.wake();
    }
  }
}
