/**
 * A per-key request budget: at most `limit` requests in each window of `windowMs`, counted in memory. The map
 * is bounded (the oldest windows go first), so a flood of distinct keys costs memory it gives back.
 */
export class RateLimit {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 10_000,
  ) {}

  /** Counts one request: undefined when it may go on, else the seconds until the key's window ends. */
  take(key: string, now = Date.now()): number | undefined {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      this.windows.delete(key);
      if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value as string);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count++;
    return w.count <= this.limit ? undefined : Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }
}
