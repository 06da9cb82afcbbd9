import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's root folder, found from this module whether it runs from src/ (tsx) or dist/src/ (built). */
export const packageRoot: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'schema'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('braid: cannot find the package root');
    dir = parent;
  }
  return dir;
})();
