import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { patient } from './patience.js';

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
    timeout: patient(options.timeoutMs ?? 60_000),
  });
  if (result.error) throw result.error;
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr, ms: performance.now() - started };
}

/**
 * Runs a braid command inside this test process: the CLI's own `main`, with the command's working folder and
 * environment, its output captured as the process's streams would carry it (terminal-safe). A command costs
 * what it does, not a Node start and a module load each; tests of the process itself (exit on a closed pipe, a
 * command that hangs, signals) use `runCli`. Commands run one at a time per test file, as `env` is the process's.
 */
export async function runCliInProcess(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; ask?: (question: string) => Promise<string | undefined> } = {},
): Promise<CliResult> {
  const [{ main }, { terminalSafe }] = await Promise.all([import('../../src/cli/main.js'), import('../../src/cli/terminal-safe.js')]);
  // every change a command makes is audited as its actor: one name on every machine, so goldens hold
  const env: NodeJS.ProcessEnv = { NO_COLOR: '1', BRAID_ACTOR: 'tester', ...options.env };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const set = (values: NodeJS.ProcessEnv) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  let stdout = '';
  let stderr = '';
  const started = performance.now();
  set(env);
  try {
    const code = await main(args, {
      stdout: (s) => void (stdout += terminalSafe(s)),
      stderr: (s) => void (stderr += terminalSafe(s)),
      cwd: options.cwd ?? repoRoot,
      isTTY: false,
      ask: options.ask,
    });
    return { code, stdout, stderr, ms: performance.now() - started };
  } finally {
    set(saved);
  }
}
