import { randomBytes } from 'node:crypto';
import type { Database } from '../runtime/db/types.js';
import { changeListeners } from '../runtime/index.js';
import type { ChangeListeners } from '../runtime/reads/change-listeners.js';

/**
 * Event ids for server-sent events: increasing for the life of the server and across restarts (they start
 * from the clock in microseconds), so a client that resumes with Last-Event-ID compares like with like.
 */
export class EventClock {
  private last = 0;

  next(): number {
    this.last = Math.max(this.last + 1, Date.now() * 1000);
    return this.last;
  }

  /** A client resumed with an id from before a restart: later ids stay above it. */
  observe(id: number): void {
    if (id > this.last) this.last = id;
  }
}

export type FeedChange = { kind: 'workflows'; ids: ReadonlySet<string> } | { kind: 'all' } | { kind: 'dev' };

const REMEMBERED = 10_000;
/** How long a registration lasts; it is renewed at a third of that. */
const LISTENER_TTL_MS = 60_000;

/**
 * What changed, as Postgres reports it: one LISTEN on "<schema>_changed", whose notifications (sent on commit
 * by triggers) name the workflows a statement touched. Remembers when each workflow last changed, so a
 * client resuming with Last-Event-ID is told only what it missed.
 */
export class ChangeFeed {
  readonly clock = new EventClock();
  /** Since when writers have been notifying this server without a gap: what it knows of changes starts there. */
  private knownSince = Number.MAX_SAFE_INTEGER;
  private readonly changedAt = new Map<string, number>();
  /** Changes before this id are no longer remembered per workflow. */
  private forgottenBefore = 0;
  private allChangedAt = 0;
  private anyChangedAt = 0;
  private readonly listeners = new Set<(change: FeedChange) => void>();
  private unlisten?: () => Promise<void>;
  private renew?: NodeJS.Timeout;
  private readonly id = randomBytes(8).toString('hex');
  /** Where this feed says it listens (writers notify only while some feed does). */
  private registry?: ChangeListeners;
  /** Open streams: while there is one, writers are asked to notify. */
  private users = 0;
  private linger?: NodeJS.Timeout;
  private registered?: Promise<void>;

  /** `lingerMs`: how long the feed keeps listening after its last stream closed. */
  constructor(private readonly lingerMs = 30_000) {}

  async start(db: Database, schema: string): Promise<void> {
    this.registry = changeListeners(db, schema);
    this.unlisten = await db.listen(`${schema}_changed`, (payload) => this.received(payload));
  }

  /**
   * A stream opens: the first one registers this server as a listener (writers notify only while some
   * server listens); the returned function closes it, and some time after the last one closes, the server
   * unregisters.
   */
  async acquire(): Promise<() => void> {
    clearTimeout(this.linger);
    this.users++;
    try {
      this.registered ??= this.register();
      await this.registered;
    } catch (error) {
      this.users--;
      this.registered = undefined;
      throw error;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // a client that reconnects soon (a network blip) finds the feed still listening, so it is told only what it missed
      if (--this.users === 0) this.linger = setTimeout(() => void this.unregister(), this.lingerMs).unref();
    };
  }

  private async register(): Promise<void> {
    const registry = this.registry!;
    await registry.register(this.id, LISTENER_TTL_MS);
    this.knownSince = this.clock.next();
    this.renew = setInterval(() => void registry.register(this.id, LISTENER_TTL_MS).catch(() => undefined), LISTENER_TTL_MS / 3);
    this.renew.unref();
  }

  private async unregister(): Promise<void> {
    if (!this.registered) return;
    this.registered = undefined;
    clearInterval(this.renew);
    this.knownSince = Number.MAX_SAFE_INTEGER;
    await this.registry?.unregister(this.id).catch(() => undefined);
  }

  private received(payload: string): void {
    const at = this.clock.next();
    this.anyChangedAt = at;
    if (payload === '*') {
      this.allChangedAt = at;
      this.emit({ kind: 'all' });
      return;
    }
    const ids = new Set(payload.split(' ').filter(Boolean));
    for (const id of ids) {
      this.changedAt.delete(id);
      this.changedAt.set(id, at);
    }
    while (this.changedAt.size > REMEMBERED) {
      const [oldest, when] = this.changedAt.entries().next().value as [string, number];
      this.changedAt.delete(oldest);
      this.forgottenBefore = when;
    }
    this.emit({ kind: 'workflows', ids });
  }

  /** The dev process's reload state changed. */
  devChanged(): void {
    this.emit({ kind: 'dev' });
  }

  private emit(change: FeedChange): void {
    for (const listener of this.listeners) listener(change);
  }

  subscribe(listener: (change: FeedChange) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Whether a workflow (or, without an id, any workflow) may have changed after event `since`. */
  changedSince(since: number, id?: string): boolean {
    if (since < this.knownSince || this.allChangedAt > since) return true;
    if (id === undefined) return this.anyChangedAt > since;
    const at = this.changedAt.get(id);
    return at !== undefined ? at > since : this.forgottenBefore > since;
  }

  async stop(): Promise<void> {
    clearTimeout(this.linger);
    await this.unregister();
    await this.unlisten?.();
  }
}
