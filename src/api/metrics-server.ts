import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../runtime/log.js';
import type { Metrics } from '../runtime/metrics.js';

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

/** `braid worker --metrics-port`: GET /metrics and nothing else, for a Prometheus scraper. */
export async function serveMetrics(metrics: Metrics, port: number, host: string, log?: Logger): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') return void sendMetrics(metrics, res, log);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('GET /metrics\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/metrics`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
