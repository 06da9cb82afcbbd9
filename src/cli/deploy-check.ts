import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HandlerSet } from '../deploy/findings.js';
import { loadHandlers } from '../runtime/index.js';
import { displayPath } from './definitions.js';
import { type Io, SubjectError } from './io.js';
import { braidDir, databaseUrl, handlersModule, project } from './project.js';

/**
 * The handlers module a deploy ships (--handlers, else the config's), loaded the way `braid worker` loads it,
 * as the set of kinds it handles with the kinds the config serves elsewhere (over HTTP, by another worker);
 * undefined when no module is configured (deploy-missing-handler is then not checked).
 */
export async function handlerSet(io: Io, flag: string | undefined, options: { force?: boolean } = {}): Promise<HandlerSet | undefined> {
  const path = handlersModule(io, flag);
  if (path === undefined) return undefined;
  try {
    const handlers = await loadHandlers(path);
    return { file: displayPath(io, path), kinds: new Set([...Object.keys(handlers), ...servedElsewhere(io).keys()]) };
  } catch (error) {
    const problem = `cannot load the handlers module ${displayPath(io, path)}: ${(error as Error).message.split('\n')[0]}`;
    // a deploy job that cannot import the application's handlers may still deploy, on purpose
    if (options.force) {
      io.stderr(`braid: ${problem}: missing handlers are not checked (--force)\n`);
      return undefined;
    }
    throw new SubjectError(`braid: ${problem} (pass --handlers MODULE, or --force to go on without checking handlers)`);
  }
}

/** Whether a database is there to compare with: a URL (flag, DATABASE_URL, config), or the project's embedded one. */
export function hasDatabase(io: Io, flag: string | undefined): boolean {
  return databaseUrl(io, flag) !== undefined || existsSync(join(braidDir(io), 'db'));
}

/** The paths given on the command line, resolved from the working folder. */
export function givenPaths(io: Io, positionals: readonly string[]): string[] {
  return positionals.map((p) => resolve(io.cwd, p));
}

/** The kinds the config serves outside the handlers module, with where: over HTTP, or by a worker of another name. */
export function servedElsewhere(io: Io): Map<string, { http: true } | { worker: string }> {
  const out = new Map<string, { http: true } | { worker: string }>();
  for (const [kind, k] of Object.entries(project(io).config?.kinds ?? {})) {
    if (k.http) out.set(kind, { http: true });
    else if (k.worker !== undefined) out.set(kind, { worker: k.worker });
  }
  return out;
}
