import { existsSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { packageRoot } from '../paths.js';

/** Where the build puts the page (bundled at build time: no CDN, works offline). */
export const uiDir = join(packageRoot, 'dist', 'ui');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json',
};

const HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src " +
    "'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

/**
 * Serves the UI: a file of the bundle when the path names one, else the page itself (its own router reads
 * the path). Paths never leave the bundle's folder.
 */
export function serveUi(path: string, res: ServerResponse): void {
  const index = join(uiDir, 'index.html');
  if (!existsSync(index)) {
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', ...HEADERS });
    res.end('The web UI is not built: run `npm run build` in the braid package.\n');
    return;
  }
  let decoded = '/';
  try {
    decoded = decodeURIComponent(path);
  } catch {
    /* not percent-encoding: the page itself */
  }
  const file = normalize(join(uiDir, decoded));
  const inside = file.startsWith(uiDir + sep);
  const target = inside && extname(file) !== '' && existsSync(file) ? file : index;
  const immutable = target !== index && /\/assets\//.test(path);
  res.writeHead(200, {
    'content-type': TYPES[extname(target)] ?? 'application/octet-stream',
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    ...HEADERS,
  });
  res.end(readFileSync(target));
}
