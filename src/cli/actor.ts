import { userInfo } from 'node:os';

/**
 * Who an operator action is recorded as: --actor, else BRAID_ACTOR, else the OS user (the audit trail's actor;
 * scripts and CI set BRAID_ACTOR to name themselves).
 */
export function actorName(flag: string | undefined): string {
  if (flag !== undefined) return flag;
  if (process.env.BRAID_ACTOR) return process.env.BRAID_ACTOR;
  try {
    return userInfo().username;
  } catch {
    // a uid without a passwd entry (some containers) has no name
    return `uid ${process.getuid?.() ?? 'unknown'}`;
  }
}
