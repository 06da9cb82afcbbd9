import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * A worker thread's module, beside the caller's (`meta` is its import.meta.url): the compiled one; or, running
 * from source (braid's own tests), the TypeScript one through tsx in the thread (a thread does not inherit the
 * loader hooks of its parent).
 */
export function threadEntry(meta: string, name: string): { file: string | URL; eval: boolean } {
  if (meta.endsWith('.js')) return { file: new URL(`./${name}.js`, meta), eval: false };
  // tsx's ESM API, beside its ESM loader (the package resolves `tsx/esm/api` to its CommonJS build here)
  const tsx = new URL('./api/index.mjs', pathToFileURL(createRequire(meta).resolve('tsx/esm'))).href;
  const file = new URL(`./${name}.ts`, meta).href;
  return { file: `import(${JSON.stringify(tsx)}).then((tsx) => tsx.tsImport(${JSON.stringify(file)}, ${JSON.stringify(file)}))`, eval: true };
}
