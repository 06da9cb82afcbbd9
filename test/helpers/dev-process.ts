import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { braidBin } from './cli.js';
import { afterEachFile } from './file-end.js';
import { exited, printed } from './processes.js';
import { backend, postgresUrl, uniqueSchema } from './runtime.js';

const children: ChildProcess[] = [];
afterEachFile(async () => {
  const alive = children.splice(0).filter((c) => c.exitCode === null && c.signalCode === null);
  for (const c of alive) c.kill('SIGKILL');
  await Promise.all(alive.map(exited));
});

/** A temporary project folder: definitions (file name -> text) and other files (path -> text). */
export function tempProject(definitions: Record<string, string>, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'braid-dev-'));
  mkdirSync(join(dir, 'definitions'));
  for (const [name, text] of Object.entries(definitions)) writeFileSync(join(dir, 'definitions', name), text);
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return dir;
}

export interface DevProcess {
  child: ChildProcess;
  /** The project folder it runs in. */
  cwd: string;
  /** Its schema, on Postgres. */
  schema?: string;
  url: string;
  token: string;
  output(): string;
  /** Resolves once the output (from `from` on) contains `text`. */
  waitForOutput(text: string | RegExp, from?: number, timeoutMs?: number): Promise<void>;
  api<T = any>(method: 'GET' | 'POST', path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
  stop(): Promise<number | null>;
}

/**
 * `braid dev` (or another serving command) as a user runs it: a separate process on a free port, against the
 * suite's backend (embedded, or Postgres in a schema of its own).
 */
export async function startDev(dir: string, args: string[] = [], command = 'dev', env: NodeJS.ProcessEnv = {}): Promise<DevProcess> {
  const schema = backend === 'postgres' ? uniqueSchema() : undefined;
  const db = schema ? ['--database', postgresUrl, '--schema', schema] : [];
  let out = '';
  const child = spawn(process.execPath, [braidBin, command, '--port', '0', ...db, ...args], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: '1', ...(backend === 'postgres' ? {} : { DATABASE_URL: '' }), ...env },
  });
  children.push(child);
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // the line is awaited as the output arrives; the bound is only for a process that hangs silently (a busy
  // machine has taken over 20 s to start `braid dev` on the embedded database)
  const waitForOutput = (text: string | RegExp, from = 0, timeoutMs = 180_000) => printed({ child, output: () => out.slice(from) }, text, timeoutMs);
  await waitForOutput(command === 'ui' ? /^http:\/\/\S+\/$/m : 'UI and API at');
  const url = command === 'ui' ? /^(http:\/\/\S+)\/$/m.exec(out)![1] : /UI and API at (http:\/\/\S+)\//.exec(out)![1];
  const token = env.BRAID_UI_TOKEN ?? readFileSync(join(dir, '.braid', 'token'), 'utf8').trim();
  return {
    child,
    cwd: dir,
    schema,
    url,
    token,
    output: () => out,
    waitForOutput,
    async api(method, path, body, headers = {}) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.on('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}
