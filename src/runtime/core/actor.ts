import type { Queryable } from '../db/types.js';
import { writeAudit } from '../sql/audit.js';
import { findUnstorable } from './storable.js';

/** An operator action asked with a value it cannot take (a scope, a target, a reason, a filter). */
export class OperationInvalidError extends Error {
  readonly code = 'operation_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'OperationInvalidError';
  }
}

/** The longest reason, actor or target an action keeps (longer is refused, not cut). */
export const MAX_LABEL = 200;
export const MAX_REASON = 2000;

/** Checks an operator's free text: a string within its bound, no control characters; trimmed. */
export function checkText(what: string, value: unknown, max: number, required: boolean): string | null {
  if (value === undefined || value === null || value === '') {
    if (required) throw new OperationInvalidError(`${what} is required`);
    return null;
  }
  if (typeof value !== 'string') throw new OperationInvalidError(`${what} must be a string, not ${typeof value}`);
  const text = value.trim();
  if (text.length === 0 && required) throw new OperationInvalidError(`${what} is required`);
  if (text.length > max) throw new OperationInvalidError(`${what} is ${text.length} characters long; at most ${max}`);
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(text) || findUnstorable(text))
    throw new OperationInvalidError(`${what} has control characters or a lone surrogate`);
  return text.length === 0 ? null : text;
}

/**
 * Who acts and why: every operator action records them in the audit trail. The CLI names its actor (--actor,
 * BRAID_ACTOR or the OS user), the API its signed-in user with the user's role and the request's address.
 */
export interface ActorOptions {
  /** Who acts. Default: "api". */
  actor?: string;
  reason?: string;
  /** The actor's role, when a user acts through the API. */
  role?: string;
  /** Where the request came from (the API's remote address; the audit line's source). */
  address?: string;
}

/** The checked who and why of an action, as its audit line records them. */
export interface Acting {
  actor: string;
  reason: string | null;
  role: string | null;
  source: string | null;
}

export function actorOf(o: ActorOptions): Acting {
  return {
    actor: checkText('the actor', o.actor ?? 'api', MAX_LABEL, true)!,
    reason: checkText('the reason', o.reason, MAX_REASON, false),
    role: checkText('the role', o.role, MAX_LABEL, false),
    source: checkText('the source address', o.address, MAX_LABEL, false),
  };
}

/**
 * The who of an action that an application also takes in bulk (a start, a signal, an emit): audited only when
 * an actor is named (the CLI, the API and the UI always name one), so an application's own traffic writes none.
 */
export function namedActor(o: ActorOptions): Acting | undefined {
  return o.actor === undefined ? undefined : actorOf(o);
}

/** The audit lines of workflows an actor started (none for a start that found its workflow there already). */
export async function auditStarts(
  q: Queryable,
  ctx: { s: string; now: Date },
  who: Acting | undefined,
  name: string,
  started: readonly { id: string; existing: boolean }[],
): Promise<void> {
  if (!who) return;
  const lines = started.filter((w) => !w.existing).map((w) => ({ action: 'workflow.start', target: name, workflow_id: w.id, ...who }));
  await writeAudit(q, ctx.s, ctx.now, lines);
}
