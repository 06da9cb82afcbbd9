/** Exit codes shared by every command (SPEC "The CLI"). */
export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 3 } as const;

/** A problem with how the command was called: one line on stderr, exit 2. */
export class UsageError extends Error {}

/** The subject failed (bad definition, bad inputs, unknown name): message printed as is, exit 1. */
export class SubjectError extends Error {}

/** The database cannot be reached or opened: exit 3. */
export class ConnectionError extends Error {}

export interface Io {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  cwd: string;
  isTTY: boolean;
}

export const processIo: Io = {
  stdout: (s) => void process.stdout.write(s),
  stderr: (s) => void process.stderr.write(s),
  cwd: process.cwd(),
  isTTY: Boolean(process.stdout.isTTY),
};
