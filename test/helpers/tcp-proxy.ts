import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of the shared Postgres, so a test can take "the database" away from some processes
 * without touching the server others use: cut (every connection reset, new ones refused), or black-holed (every
 * connection stays open and carries nothing, new ones are accepted and hang: a hung server, a stuck pooler, a
 * partition without RST), and give it back.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<[Socket, Socket]>();
  private down = false;
  private silent = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    this.server = createServer((client) => {
      if (this.down) return void client.destroy();
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      for (const s of pair) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          this.sockets.delete(s);
          this.pairs.delete(pair);
          for (const other of pair) other.destroy();
        });
      }
      if (this.silent) this.hold(pair);
      else this.flow(pair);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as { port: number }).port;
    return this.port;
  }

  /** A connection string through the proxy, from one to the real server. */
  url(direct: string): string {
    const u = new URL(direct);
    u.host = `127.0.0.1:${this.port}`;
    return u.toString();
  }

  /** The outage begins: every connection through the proxy is cut, and new ones are refused until restore(). */
  cut(): void {
    this.down = true;
    for (const s of this.sockets) s.destroy();
  }

  /** The network goes silent: connections stay open, bytes are held, nothing is refused or reset. */
  blackhole(): void {
    this.silent = true;
    for (const pair of this.pairs) this.hold(pair);
  }

  /** The outage ends: new connections are taken again, and held bytes flow on (a partition that healed). */
  restore(): void {
    this.down = false;
    if (!this.silent) return;
    this.silent = false;
    for (const pair of this.pairs) this.flow(pair);
  }

  private flow([client, upstream]: [Socket, Socket]): void {
    client.pipe(upstream);
    upstream.pipe(client);
    client.resume();
    upstream.resume();
  }

  private hold([client, upstream]: [Socket, Socket]): void {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export function proxyFor(direct: string): TcpProxy {
  const u = new URL(direct);
  return new TcpProxy(u.hostname, Number(u.port || 5432));
}
