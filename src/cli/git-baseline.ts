import { spawnSync } from 'node:child_process';
import { relative, resolve, sep } from 'node:path';
import { isDefinitionFile } from '../compiler/load.js';
import { DEFAULT_LIMITS, type RawSource } from '../compiler/parse.js';
import { validate } from '../compiler/validate.js';
import { globToRegExp, matchesAny } from '../config/globs.js';
import type { BaselineVersion } from '../deploy/baseline.js';
import { type Io, UsageError } from './io.js';
import { project, projectChecks } from './project.js';

/** How long one git call may take: a repository on a hung network mount must not hang the plan. */
const GIT_TIMEOUT_MS = 60_000;

function git(cwd: string, args: string[], maxBuffer = 64 * 1024 * 1024): { ok: boolean; stdout: Buffer; stderr: string } {
  const r = spawnSync('git', args, { cwd, maxBuffer, timeout: GIT_TIMEOUT_MS });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') throw new UsageError('--against GIT_REF needs git, and git is not installed');
  return { ok: r.status === 0 && !r.error, stdout: r.stdout ?? Buffer.alloc(0), stderr: (r.stderr ?? Buffer.alloc(0)).toString('utf8').trim() };
}

/**
 * Which paths (relative to the repository root, `/`-separated) are definitions: the files and folders given
 * on the command line, else the project's configured set (its globs and ignores, or its definitions folder).
 */
function selector(io: Io, top: string, given: readonly string[], definitionsFlag: string | undefined): (path: string) => boolean {
  const rel = (abs: string) => relative(top, abs).split(sep).join('/');
  const under = (prefixes: string[]) => (p: string) => prefixes.some((x) => x === '' || p === x || p.startsWith(`${x}/`));
  const hidden = (p: string) => p.split('/').some((seg) => seg.startsWith('.') || seg === 'node_modules');
  if (given.length > 0) {
    const inside = under(given.map((g) => rel(resolve(io.cwd, g))));
    return (p) => inside(p) && isDefinitionFile(p);
  }
  const { config } = project(io);
  const ignore = (config?.ignore ?? []).map(globToRegExp);
  const root = rel(config?.root ?? io.cwd);
  const fromRoot = (p: string) => (root === '' ? p : p.startsWith(`${root}/`) ? p.slice(root.length + 1) : undefined);
  if (definitionsFlag !== undefined || config?.definitions === undefined) {
    const folder = under([rel(definitionsFlag !== undefined ? resolve(io.cwd, definitionsFlag) : resolve(config?.root ?? io.cwd, 'definitions'))]);
    return (p) => folder(p) && !hidden(p) && isDefinitionFile(p) && !(config && matchesAny(fromRoot(p) ?? '', ignore));
  }
  const globs = (typeof config.definitions === 'string' ? [config.definitions] : config.definitions).map(globToRegExp);
  return (p) => {
    const mine = fromRoot(p);
    return mine !== undefined && !hidden(p) && isDefinitionFile(p) && matchesAny(mine, globs) && !matchesAny(mine, ignore);
  };
}

/**
 * The definitions as they were at a git ref, as the versions a deploy compares with: one per workflow that
 * validates there (what runs in production is not known without a database: `running` is null).
 */
export function definitionsAtRef(io: Io, ref: string, given: readonly string[], definitionsFlag: string | undefined): BaselineVersion[] {
  const top = git(io.cwd, ['rev-parse', '--show-toplevel']);
  if (!top.ok) throw new UsageError(`--against ${ref}: ${io.cwd} is not inside a git repository (use --against db to compare with a database)`);
  const root = top.stdout.toString('utf8').trim();
  if (ref.startsWith('-') || !git(root, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).ok) throw new UsageError(`--against ${ref}: no such git ref`);
  const listed = git(root, ['ls-tree', '-r', '-z', '--name-only', ref]);
  if (!listed.ok) throw new UsageError(`--against ${ref}: git ls-tree failed: ${listed.stderr}`);
  const wanted = selector(io, root, given, definitionsFlag);
  const paths = listed.stdout
    .toString('utf8')
    .split('\0')
    .filter((p) => p !== '' && wanted(p));
  const sources: RawSource[] = paths.map((p) => {
    const label = `${ref}:${p}`;
    const blob = git(root, ['cat-file', 'blob', `${ref}:${p}`], DEFAULT_LIMITS.maxBytes + 1);
    if (!blob.ok) return { path: label, content: '', problem: `cannot read it at ${ref}: ${blob.stderr || 'too large'}` };
    return { path: label, content: blob.stdout };
  });
  const result = validate(sources, projectChecks(io));
  return result.definitions.map((d) => ({ name: d.name, hash: d.hash, current: true, running: null, normalized: d.normalized }));
}
