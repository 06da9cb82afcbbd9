import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Handlers } from './handlers.js';

/**
 * Loads a handlers module (`.js`, `.mjs` or `.ts`): its default export maps kinds to handlers. TypeScript
 * goes through tsx, since Node 20 cannot import it. `fresh` loads a new copy (hot reload).
 */
export async function loadHandlers(path: string, options: { fresh?: boolean } = {}): Promise<Handlers> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new Error(`handlers module not found: ${path}`);
  const url = pathToFileURL(abs).href + (options.fresh ? `?v=${Date.now()}` : '');
  // TypeScript goes through tsx's loader, scoped to this import (ESM even outside a "type": "module" package)
  const mod = (/\.[mc]?ts$/.test(abs) ? await (await import('tsx/esm/api')).tsImport(url, import.meta.url) : await import(url)) as { default?: unknown };
  let handlers = mod.default;
  // a TypeScript module outside an ESM package arrives through CommonJS interop: its default is nested once more
  const inner = (handlers as { default?: unknown } | undefined)?.default;
  if (typeof inner === 'object' && inner !== null && Object.keys(handlers as object).every((k) => k === 'default' || k === '__esModule')) handlers = inner;
  if (typeof handlers !== 'object' || handlers === null) throw new Error(`${path} must default-export an object mapping kinds to handler functions`);
  for (const [kind, fn] of Object.entries(handlers)) {
    if (typeof fn !== 'function') throw new Error(`${path}: handler for kind "${kind}" is not a function`);
  }
  return handlers as Handlers;
}
