import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of the shared Postgres, so a test can take "the database" away from some processes
 * (every connection cut, new ones refused) and give it back, without touching the server others use.
 */
export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private down = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    this.server = createServer((client) => {
      if (this.down) return void client.destroy();
      const upstream = createConnection({ host: this.targetHost, port: this.targetPort });
      const pair = [client, upstream];
      for (const s of pair) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          this.sockets.delete(s);
          for (const other of pair) other.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
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

  restore(): void {
    this.down = false;
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
