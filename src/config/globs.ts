import { type Dirent, readdirSync, realpathSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * Globs over paths relative to a project folder, with `/` between segments: `**` is any number of folders,
 * `*` any characters within a segment, `?` one character, `{a,b}` either. A glob that names a folder
 * (`definitions`, `drafts/`) also means everything under it.
 */
export function globToRegExp(glob: string): RegExp {
  const g = glob.replace(/^\.\//, '').replace(/\/+$/, '');
  let re = '';
  for (let i = 0; i < g.length; i++) {
    const c = g[i];
    if (c === '*' && g[i + 1] === '*') {
      const slash = g[i + 2] === '/';
      re += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '{') {
      const close = g.indexOf('}', i);
      if (close < 0) re += '\\{';
      else {
        re += `(?:${g
          .slice(i + 1, close)
          .split(',')
          .map(escape)
          .join('|')})`;
        i = close;
      }
    } else re += escapeGlob(c);
  }
  return new RegExp(`^${re}(?:/.*)?$`);
}

function escapeGlob(s: string): string {
  return s.replace(/[.+^${}()|[\]\\]/g, '\\$&');
}

export function matchesAny(path: string, globs: readonly RegExp[]): boolean {
  return globs.some((g) => g.test(path));
}

/** The leading segments of a glob with no wildcard: the only folder a walk for it needs to enter. */
function staticPrefix(glob: string): string {
  const parts = glob.replace(/^\.\//, '').split('/');
  const fixed: string[] = [];
  for (const p of parts.slice(0, -1)) {
    if (/[*?{]/.test(p)) break;
    fixed.push(p);
  }
  return fixed.join('/');
}

/**
 * Files under `root` matching any of `include` and none of `exclude`, as absolute paths, sorted. Only the
 * folders the globs can reach are walked; hidden folders, node_modules and .braid never are.
 */
export function findFiles(root: string, include: readonly string[], exclude: readonly string[] = []): string[] {
  const inc = include.map(globToRegExp);
  const exc = exclude.map(globToRegExp);
  const found = new Set<string>();
  const starts = new Set(include.map(staticPrefix));
  const seen = new Set<string>();
  const walk = (dir: string, depth: number): void => {
    let real: string;
    try {
      real = realpathSync(dir);
    } catch {
      return;
    }
    // links are followed, each folder once
    if (depth > 64 || seen.has(real)) return;
    seen.add(real);
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      const abs = join(dir, e.name);
      const rel = relative(root, abs).split(sep).join('/');
      if (matchesAny(rel, exc)) continue;
      if (e.isDirectory() || (e.isSymbolicLink() && isFolder(abs))) walk(abs, depth + 1);
      else if (matchesAny(rel, inc)) found.add(abs);
    }
  };
  for (const start of starts) walk(start === '' ? root : join(root, start), 0);
  return [...found].sort();
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
