import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Handlers } from './handlers.js';

/**
 * Loads a handlers module (`.js`, `.mjs` or `.ts`): its default export maps kinds to handlers. TypeScript
 * goes through tsx, since Node 20 cannot import it. `fresh` loads a new copy (hot reload).
 */
export async function loadHandlers(path: string, options: { fresh?: boolean } = {}): Promise<Handlers> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new Error(`handlers module not found: ${path}`);
  const url = pathToFileURL(abs).href;
  let mod: { default?: unknown };
  if (options.fresh) {
    // each tsx import has its own module namespace, so the files the module imports load fresh too; modules
    // loaded as CommonJS live in require's cache instead, and leave it
    forgetRequired(dirname(abs));
    mod = (await (await import('tsx/esm/api')).tsImport(url, import.meta.url)) as typeof mod;
  } else {
    // TypeScript goes through tsx's loader, scoped to this import (ESM even outside a "type": "module" package)
    mod = (/\.[mc]?ts$/.test(abs) ? await (await import('tsx/esm/api')).tsImport(url, import.meta.url) : await import(asOnDisk(abs, url))) as typeof mod;
  }
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

/** The content of each module this process imported, by path: ESM keeps a module by its URL for good. */
const imported = new Map<string, string>();

/**
 * The URL that imports the module as it is on disk now: its plain URL the first time (a CLI command's only
 * time, so its stack traces name the file as it is), a versioned one when a process that embeds braid loads a
 * module whose content changed since.
 */
function asOnDisk(abs: string, url: string): string {
  const digest = createHash('sha256').update(readFileSync(abs)).digest('hex').slice(0, 16);
  const first = imported.get(abs);
  if (first === undefined) imported.set(abs, digest);
  return first === undefined || first === digest ? url : `${url}?content=${digest}`;
}

/** Drops the project's own files under dir (not its packages) from require's cache. */
function forgetRequired(dir: string): void {
  const cache = createRequire(import.meta.url).cache;
  for (const file of Object.keys(cache)) {
    if (file.startsWith(dir + sep) && !file.includes(`${sep}node_modules${sep}`)) delete cache[file];
  }
}
