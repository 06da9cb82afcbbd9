import { closeSync, constants, type Dirent, fstatSync, openSync, readdirSync, readSync, realpathSync, type Stats, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { DEFAULT_LIMITS, type RawSource } from './parse.js';

export const DEFINITION_EXTENSIONS = ['.yaml', '.yml', '.json'];

export function isDefinitionFile(path: string): boolean {
  return DEFINITION_EXTENSIONS.includes(extname(path).toLowerCase()) && !isTestFile(path);
}

/** Workflow test files (`*.test.yaml`, `*.test.json`) live beside definitions but are never definitions. */
export function isTestFile(path: string): boolean {
  return /\.test\.(ya?ml|json)$/i.test(path);
}

/**
 * Definition files under a folder (recursively, skipping hidden folders and node_modules), sorted. Links are
 * followed, to files and to folders, each folder and file once (a link back up is no loop, a file linked
 * twice is no duplicate). Entries that are not folders are listed whatever they are (a FIFO, a broken link):
 * reading them says what is wrong.
 */
export function listDefinitionFiles(dir: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const seenFiles = new Set<string>();
  const walk = (d: string): void => {
    let real: string;
    try {
      real = realpathSync(d);
    } catch {
      return;
    }
    if (seen.has(real)) return;
    seen.add(real);
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const p = join(d, entry.name);
      let isDir = entry.isDirectory();
      if (entry.isSymbolicLink()) isDir = statOrUndefined(p)?.isDirectory() ?? false;
      if (isDir) walk(p);
      else if (isDefinitionFile(entry.name)) {
        const real = realOrSelf(p);
        if (seenFiles.has(real)) continue;
        seenFiles.add(real);
        out.push(p);
      }
    }
  };
  walk(dir);
  return out;
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Reads files and folders into sources; a folder contributes its definition files. Nothing is trusted: a
 * file is read only up to the size limit, a FIFO or device is never read, and what cannot be read becomes a
 * per-file problem (reported as a diagnostic) instead of failing the run.
 */
export function readSources(paths: readonly string[], options: { maxBytes?: number } = {}): RawSource[] {
  const files: string[] = [];
  for (const p of paths) {
    if (statOrUndefined(p)?.isDirectory()) files.push(...listDefinitionFiles(p));
    else files.push(p);
  }
  return files.map((path) => readSource(path, options.maxBytes));
}

/** One file as a source: its bytes (at most maxBytes + 1 are read), its size when larger, or why it cannot be read. */
export function readSource(path: string, maxBytes = DEFAULT_LIMITS.maxBytes): RawSource {
  let fd: number;
  try {
    // non-blocking: opening a FIFO must not wait for a writer
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { path, content: '', problem: `cannot read the file: ${fsReason(error)}` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { path, content: '', problem: `not a regular file (${kindOf(st)}): only files are read` };
    if (st.size > maxBytes) return { path, content: '', size: st.size };
    // read to the end, but never past the limit: the file may grow while it is read
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(64 * 1024, maxBytes + 1 - total));
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > maxBytes) return { path, content: '', size: total };
    }
    return { path, content: Buffer.concat(chunks, total) };
  } catch (error) {
    return { path, content: '', problem: `cannot read the file: ${fsReason(error)}` };
  } finally {
    closeSync(fd);
  }
}

/** A file's text for a diagnostic's snippet, when it is a regular file within the size limit. */
export function readSnippetText(path: string, maxBytes = DEFAULT_LIMITS.maxBytes): string | undefined {
  const source = readSource(path, maxBytes);
  if (source.problem !== undefined || source.size !== undefined) return undefined;
  return Buffer.from(source.content).toString('utf8');
}

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a file';
}

function fsReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOENT':
      return 'no such file (a broken link?)';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    case 'EISDIR':
      return 'it is a folder';
    default:
      return (error as Error).message ?? String(error);
  }
}
