/**
 * Per queue, one wake-up for when a rate-limited task of it may start (its key's token frees): the claim says
 * when, and no notification comes for a window that merely passes.
 */
export class TokenWakes {
  private readonly wakes = new Map<string, { at: number; timer: NodeJS.Timeout }>();

  constructor(private readonly wake: (queue: string) => void) {}

  /** Wakes the queue `inMs` from now, unless an earlier wake-up is set. */
  set(queue: string, inMs: number): void {
    const at = Date.now() + Math.max(inMs, 1);
    const set = this.wakes.get(queue);
    if (set && set.at <= at) return;
    if (set) clearTimeout(set.timer);
    const timer = setTimeout(() => {
      this.wakes.delete(queue);
      this.wake(queue);
    }, at - Date.now());
    timer.unref();
    this.wakes.set(queue, { at, timer });
  }

  clear(): void {
    for (const w of this.wakes.values()) clearTimeout(w.timer);
    this.wakes.clear();
  }
}
