import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The project's private state (.braid/: the embedded database, the API token and address) is its owner's
 * alone: folders 0700, files 0600, whatever the umask, and tightened when found wider.
 */

/** A folder only its owner can enter: created 0700 (with its parents), or tightened when it exists wider. */
export function privateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o700);
}

/** Writes a file only its owner can read, also when it existed with a wider mode. */
export function writePrivateFile(path: string, content: string): void {
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** Whether group or others may read or write a file. */
export function isShared(path: string): boolean {
  return (statSync(path).mode & 0o077) !== 0;
}

/** Tightens every folder (0700) and file (0600) under a path; best effort, never follows links, skips what vanishes. */
export function tightenTree(path: string): void {
  const stack = [path];
  while (stack.length > 0) {
    const p = stack.pop()!;
    try {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) continue;
      if (st.isDirectory()) {
        if ((st.mode & 0o077) !== 0) chmodSync(p, 0o700);
        for (const name of readdirSync(p)) stack.push(join(p, name));
      } else if ((st.mode & 0o077) !== 0) chmodSync(p, 0o600);
    } catch {
      /* removed meanwhile */
    }
  }
}
