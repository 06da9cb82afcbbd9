import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Handlers } from './handlers.js';

let tsxRegistered = false;

/**
 * Loads a handlers module (`.js`, `.mjs` or `.ts`): its default export maps kinds to handlers. TypeScript
 * goes through tsx, since Node 20 cannot import it. `fresh` loads a new copy (hot reload).
 */
export async function loadHandlers(path: string, options: { fresh?: boolean } = {}): Promise<Handlers> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new Error(`handlers module not found: ${path}`);
  if (/\.[mc]?ts$/.test(abs) && !tsxRegistered) {
    const { register } = await import('tsx/esm/api');
    register();
    tsxRegistered = true;
  }
  const url = pathToFileURL(abs).href + (options.fresh ? `?v=${Date.now()}` : '');
  const mod = (await import(url)) as { default?: unknown };
  const handlers = mod.default;
  if (typeof handlers !== 'object' || handlers === null) throw new Error(`${path} must default-export an object mapping kinds to handler functions`);
  for (const [kind, fn] of Object.entries(handlers)) {
    if (typeof fn !== 'function') throw new Error(`${path}: handler for kind "${kind}" is not a function`);
  }
  return handlers as Handlers;
}
