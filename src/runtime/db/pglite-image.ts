import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../paths.js';

/**
 * Images of embedded data folders (a PGlite `dumpDataDir` tarball) kept in the system's temporary folder, so
 * that a new database loads one (about a second) instead of running initdb (four to six here). An image is
 * named by what made it, so only the same engine (and, for the migrated one, the same migrations) loads it.
 */
export function imagePath(kind: string, ...made: string[]): string {
  const digest = createHash('sha256')
    .update([engineVersion(), ...made].join('\u0000'))
    .digest('hex')
    .slice(0, 16);
  return join(tmpdir(), `braid-${kind}-${digest}.tar`);
}

/** braid's own version and the engine's it depends on: an image is only reused by the release that made it. */
function engineVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string; dependencies?: Record<string, string> };
  return `${pkg.version}\u0000${pkg.dependencies?.['@electric-sql/pglite'] ?? ''}`;
}

/**
 * A Blob over bytes already in memory whose arrayBuffer() copies them at once: Node 20's own reads a large
 * Blob back in small chunks, about half a second for a 40 MB image, on every load.
 */
class BufferBlob extends Blob {
  readonly #bytes: Buffer<ArrayBuffer>;
  constructor(bytes: Buffer<ArrayBuffer>) {
    super([bytes]);
    this.#bytes = bytes;
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    const b = this.#bytes;
    return Promise.resolve(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  }
}

/**
 * The image at `path`, when this user made it: the temporary folder is shared, and an image another user wrote
 * (or could rewrite) is never loaded into this user's database. Missing or unreadable: undefined.
 */
export function readImage(path: string): Blob | undefined {
  try {
    if (!existsSync(path)) return undefined;
    const st = statSync(path);
    if (!st.isFile() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o022) !== 0) return undefined;
    return new BufferBlob(readFileSync(path));
  } catch {
    return undefined;
  }
}

/** Keeps `image` at `path`, written aside and renamed: a reader never sees half an image, and racing writers each write a whole one. */
export async function keepImage(path: string, image: Blob): Promise<void> {
  try {
    const aside = `${path}.${process.pid}`;
    writeFileSync(aside, Buffer.from(await image.arrayBuffer()), { mode: 0o600, flag: 'wx' });
    renameSync(aside, path);
  } catch {
    // a read-only temporary folder only costs the next new database its initdb (or its migration)
  }
}
