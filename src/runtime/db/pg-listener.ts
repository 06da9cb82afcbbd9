import pg from 'pg';
import { backoffMs } from '../../pacing/backoff.js';

/** How often the notification connection proves it is alive, and how long it may take to. */
const LISTENER_PING_MS = 10_000;
const LISTENER_PING_DEADLINE_MS = 5_000;

/** A statement without parameters, with a client-side deadline (pg reads `query_timeout` per query; its types do not say so). */
export function bounded(text: string, ms: number): pg.QueryConfig {
  return { text, query_timeout: ms } as pg.QueryConfig;
}

/** Closes a client's socket at once: a connection that hangs would not answer an orderly end. */
export function destroySocket(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** LISTEN on a channel, bounded as the ping is. */
function listenOn(client: pg.Client, channel: string): Promise<unknown> {
  return client.query(bounded(`LISTEN ${pg.escapeIdentifier(channel)}`, LISTENER_PING_DEADLINE_MS));
}

/**
 * LISTEN on one dedicated client, connected on first use. A connection lost (an error, its end, or a ping that
 * does not answer: a connection that hangs raises nothing) is replaced for as long as it takes (capped,
 * jittered backoff), and then the resumers are told that notifications may have been missed.
 */
export class PgListener {
  private readonly listeners = new Map<string, Set<(payload: string) => void>>();
  private readonly resumers = new Set<() => void>();
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private closed = false;

  constructor(private readonly config: pg.ClientConfig) {}

  /** Delivers the channel's payloads to onNotify until the returned function is called; onResume after an outage. */
  async listen(channel: string, onNotify: (payload: string) => void, onResume?: () => void): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    const isNew = !set;
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(onNotify);
    if (onResume) this.resumers.add(onResume);
    const client = await this.ensure();
    if (isNew && client === this.client) await listenOn(client, channel);
    return async () => {
      set!.delete(onNotify);
      if (onResume) this.resumers.delete(onResume);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    await this.client?.end().catch(() => undefined);
  }

  private async ensure(): Promise<pg.Client> {
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client(this.config);
    client.on('notification', (msg) => {
      for (const fn of this.listeners.get(msg.channel) ?? []) fn(msg.payload ?? '');
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    try {
      await client.connect();
      for (const channel of this.listeners.keys()) await listenOn(client, channel);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    const ping = setInterval(() => {
      if (this.client !== client) return clearInterval(ping);
      client.query(bounded('SELECT 1', LISTENER_PING_DEADLINE_MS)).catch(() => {
        clearInterval(ping);
        destroySocket(client);
        lost();
      });
    }, LISTENER_PING_MS);
    ping.unref();
    return client;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.failures++;
    this.reconnectTimer = setTimeout(
      () => {
        this.reconnectTimer = undefined;
        this.ensure().then(
          () => {
            this.failures = 0;
            for (const fn of this.resumers) fn();
          },
          () => this.scheduleReconnect(),
        );
      },
      backoffMs(this.failures, { initialMs: 100, maxMs: 10_000 }),
    );
    this.reconnectTimer.unref();
  }
}
