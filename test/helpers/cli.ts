import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this file whether tests run from test/ or dist/test/. */
export const repoRoot = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!dir.endsWith('/test')) dir = dirname(dir);
  dir = dirname(dir);
  return dir.endsWith('/dist') ? dirname(dir) : dir;
})();

export const braidBin = join(repoRoot, 'bin', 'braid.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the built `braid` CLI as a user would: a separate Node process. */
export function runCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): CliResult {
  const started = performance.now();
  const result = spawnSync(process.execPath, [braidBin, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: options.timeoutMs ?? 60_000,
  });
  if (result.error) throw result.error;
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr, ms: performance.now() - started };
}
