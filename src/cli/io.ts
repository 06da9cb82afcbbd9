import { isCallerError } from '../error-codes.js';
import { terminalSafe } from './terminal-safe.js';

/** Exit codes shared by every command (SPEC "The CLI"). */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 3 } as const;

/** A problem with how the command was called: one line on stderr, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The subject failed (bad definition, bad inputs, unknown name): message printed as is, exit 1. */
export class SubjectError extends Error {
  override name = 'SubjectError';
}

/** The database cannot be reached or opened: exit 3. */
export class ConnectionError extends Error {
  override name = 'ConnectionError';
}

/** What a long-running command throws for a failure: usage errors stay usage errors, anything else is the database's. */
export function commandFailure(error: unknown): Error {
  if (error instanceof UsageError) return error;
  // the caller's to mend (a sensitive field without data keys, say): the subject failed, not the connection
  return isCallerError(error) ? new SubjectError((error as Error).message) : new ConnectionError((error as Error).message);
}

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  isTTY: boolean;
  /** Asks a person at a terminal and gives the answer; absent (or undefined) where no one can be asked. */
  ask?: (question: string) => Promise<string | undefined>;
}

/** The process's own streams; what is written is terminal-safe (control bytes from data escaped). */
export const processIo: Io = {
  stdout: (s) => void process.stdout.write(terminalSafe(s)),
  stderr: (s) => void process.stderr.write(terminalSafe(s)),
  cwd: process.cwd(),
  isTTY: Boolean(process.stdout.isTTY),
  ask: async (question) => {
    if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    try {
      return await rl.question(terminalSafe(question));
    } finally {
      rl.close();
    }
  },
};

/**
 * Whether to go on with what a person should confirm: yes when `--yes` was given or no one can be asked (a
 * script asked by name), else the answer at the terminal.
 */
export async function confirmed(io: Io, question: string, yes: boolean): Promise<boolean> {
  if (yes || !io.ask) return true;
  const answer = await io.ask(`${question} [y/N] `);
  return answer === undefined || /^\s*y(es)?\s*$/i.test(answer);
}
