import { randomBytes } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../runtime/telemetry/log.js';
import type { Metrics } from '../runtime/telemetry/metrics.js';
import type { HttpError } from './http.js';
import { Guard } from './security.js';

/** Answers GET /metrics with the Prometheus text of `metrics` (a scrape that fails is a 500, said once in the log). */
export async function sendMetrics(metrics: Metrics, res: ServerResponse, log?: Logger): Promise<void> {
  try {
    const text = await metrics.text();
    res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
    res.end(text);
  } catch (error) {
    log?.warn(`metrics: a scrape failed: ${(error as Error).message}`);
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('metrics are unavailable: see the worker log\n');
  }
}

/**
 * `braid worker --metrics-port`: GET /metrics and nothing else, for a Prometheus scraper. Like `braid ui`, it
 * answers only to its own Host names (a page that rebinds its DNS name to this machine is refused), and with
 * `token` only to a request that bears it.
 */
export async function serveMetrics(
  metrics: Metrics,
  port: number,
  host: string,
  log?: Logger,
  options: { token?: string } = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const guard = new Guard(options.token ?? randomBytes(32).toString('hex'), { host });
  const refuse = (res: ServerResponse, status: number, text: string) => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(`${text}\n`);
  };
  const server: Server = createServer((req, res) => {
    try {
      guard.checkHost(req);
    } catch (error) {
      return refuse(res, (error as HttpError).status, (error as Error).message);
    }
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') return refuse(res, 404, 'GET /metrics');
    if (options.token !== undefined && guard.credentials(req)?.kind !== 'server')
      return refuse(res, 401, 'missing or wrong token (Authorization: Bearer TOKEN)');
    return void sendMetrics(metrics, res, log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  guard.listening(address.port);
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/metrics`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
