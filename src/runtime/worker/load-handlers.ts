import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, relative, resolve, sep } from 'node:path';
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
  try {
    mod = await importModule(abs, url, options.fresh === true);
  } catch (error) {
    throw new Error(syntaxErrorAt(error, abs) ?? errorText(error));
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

async function importModule(abs: string, url: string, fresh: boolean): Promise<{ default?: unknown }> {
  if (fresh) {
    // each tsx import has its own module namespace, so the files the module imports load fresh too; modules
    // loaded as CommonJS live in require's cache instead, and leave it
    forgetRequired(dirname(abs));
    return (await (await import('tsx/esm/api')).tsImport(url, import.meta.url)) as { default?: unknown };
  }
  // TypeScript goes through tsx's loader, scoped to this import (ESM even outside a "type": "module" package)
  const mod = /\.[mc]?ts$/.test(abs) ? await (await import('tsx/esm/api')).tsImport(url, import.meta.url) : await import(asOnDisk(abs, url));
  return mod as { default?: unknown };
}

const errorText = (error: unknown) => String((error as Error)?.message ?? error);

/**
 * A syntax error's place, as FILE:LINE:COL: MESSAGE. tsx (esbuild) says it on the message's second line; Node's
 * own import of a .js module says no place, so a module that failed to load is parsed again (esbuild, which tsx
 * brings) to find one.
 */
function syntaxErrorAt(error: unknown, abs: string): string | undefined {
  const transform = /^(.+?):(\d+):(\d+): ERROR: (.+)$/m.exec(errorText(error));
  if (transform) return `${shown(transform[1])}:${transform[2]}:${transform[3]}: ${transform[4]}`;
  if (/\.[mc]?ts$/.test(abs)) return undefined;
  try {
    // resolved from tsx, whose dependency it is
    const fromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/esm/api'));
    const esbuild = fromTsx('esbuild') as typeof import('esbuild');
    esbuild.transformSync(readFileSync(abs, 'utf8'), { loader: 'js', format: 'esm', sourcefile: abs, logLevel: 'silent' });
  } catch (parsed) {
    const first = (parsed as { errors?: { text: string; location?: { file: string; line: number; column: number } | null }[] }).errors?.[0];
    if (first?.location) return `${shown(first.location.file)}:${first.location.line}:${first.location.column + 1}: ${first.text}`;
  }
  return undefined;
}

/** A path as the user sees it: relative to the working folder when inside it. */
function shown(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel === '' || rel.startsWith('..') ? file : rel;
}
