/**
 * Callback terms: the links braid makes for them, and what a POST to one does. A POST is a signal of the term
 * (its body the payload, its recipient the source), stored and judged in one transaction under the workflow's
 * lock, after the checks a link owes its sender: signed by us (else 404, as for anything not there), not used
 * (a replay answers as before), not past its time (410), a body that fits (422).
 */
import type { PlanTerm } from '../../compiler/plan.js';
import { outputProblems } from '../../compiler/returns.js';
import type { Queryable } from '../db/types.js';
import type { AdvanceContext } from '../engine/context.js';
import { emitSignal } from '../engine/signal.js';
import { TaskNotFoundError } from '../errors.js';
import { signalByIdempotencyKey } from '../sql/signals.js';
import { loadWaitWorkflow, type WaitTaskRow, waitTask } from '../sql/waits.js';
import type { SignalRow } from '../waits/decide.js';
import { waitPhase } from '../waits/phase.js';
import type { CallbackLink } from '../wire/index.js';
import { type CallbackRef, mintToken, readToken } from './callback-token.js';
import { CallbackBodyError, CallbackGoneError, CallbackNotFoundError, CallbackTermUnknownError, CallbackUsedError, SecretMissingError } from './errors.js';
import type { KeyRing } from './secrets.js';

type SignalTerm = Extract<PlanTerm, { kind: 'signal' }>;
export type CallbackTerm = SignalTerm & { callback: NonNullable<SignalTerm['callback']> };

/** What a POST to a link did: counted (the signal stored), or a replay of one that had. */
export interface CallbackReceipt {
  replayed: boolean;
  signal: SignalRow;
  /** Tasks whose wait it resolved. */
  resolved: string[];
  workflowId: string;
  task: string;
  term: string;
  recipient: string | null;
}

export const callbackPath = (token: string): string => `/callbacks/${token}`;

/** A single-use link's signal is stored under this idempotency key: its second POST finds the first. */
export const linkIdempotencyKey = (link: number): string => `link:${link}`;

/** A task's callback terms. */
export function callbackTerms(t: WaitTaskRow): CallbackTerm[] {
  return (t.wait?.terms ?? []).filter((term): term is CallbackTerm => term.kind === 'signal' && term.callback !== undefined);
}

/** The links of a task's callback term, one per recipient. They exist from the workflow's start, before its wait does. */
export async function callbackLinks(
  q: Queryable,
  s: string,
  keys: KeyRing | undefined,
  workflowId: string,
  task: string,
  term: string,
): Promise<CallbackLink[]> {
  if (!keys) throw new SecretMissingError();
  const t = await waitTask(q, s, workflowId, task);
  if (!t) throw new TaskNotFoundError(workflowId, task);
  const terms = callbackTerms(t);
  const found = terms.find((x) => x.name === term);
  if (!found)
    throw new CallbackTermUnknownError(
      task,
      term,
      terms.map((x) => x.name),
    );
  const recipients = found.callback.recipients;
  const list: (string | null)[] = Array.isArray(recipients) ? recipients : [null];
  return list.map((recipient, link) => {
    const token = mintToken(keys, { workflowId, task, term, link });
    return { recipient, token, path: callbackPath(token) };
  });
}

/** The term a token names and its task's row, read under the workflow's lock; CallbackNotFoundError when any is missing. */
export async function resolveLink(
  q: Queryable,
  s: string,
  keys: KeyRing | undefined,
  token: string,
  lock: boolean,
): Promise<{ ref: CallbackRef; task: WaitTaskRow; term: CallbackTerm; recipient: string | null; workflowState: string; attempt: number }> {
  const ref = readToken(keys, token);
  if (!ref) throw new CallbackNotFoundError();
  const w = await loadWaitWorkflow(q, s, ref.workflowId, { lock });
  const task = w && (await waitTask(q, s, ref.workflowId, ref.task));
  const term = task ? callbackTerms(task).find((x) => x.name === ref.term) : undefined;
  const recipients = term?.callback.recipients;
  if (!w || !task || !term || ref.link >= (Array.isArray(recipients) ? recipients.length : 1)) throw new CallbackNotFoundError();
  return { ref, task, term, recipient: Array.isArray(recipients) ? recipients[ref.link] : null, workflowState: w.state, attempt: w.attempt };
}

/** Why a link no longer answers, or undefined while it does. */
export function goneReason(link: { task: WaitTaskRow; term: CallbackTerm; workflowState: string }, now: Date): string | undefined {
  if (link.workflowState !== 'running') return `the workflow has ended (${link.workflowState})`;
  const phase = waitPhase(link.task);
  if (phase === 'resolved') return 'the wait it answers is over';
  if (phase === 'abandoned') return `its task has ended (${link.task.state})`;
  if (phase === 'waiting' && link.task.wait_started_at) {
    const expiry = new Date(new Date(link.task.wait_started_at).getTime() + link.term.callback.expires_ms);
    if (now >= expiry) return `it expired at ${expiry.toISOString()}`;
  }
  return undefined;
}

/** A POST to a link, in the caller's transaction: see the module's comment for the order of its checks. */
export async function receiveCallback(q: Queryable, ctx: AdvanceContext, keys: KeyRing | undefined, token: string, body: unknown): Promise<CallbackReceipt> {
  const link = await resolveLink(q, ctx.s, keys, token, true);
  const { ref, term } = link;
  const payload = body === undefined ? null : body;
  const idempotencyKey = term.callback.single_use ? linkIdempotencyKey(ref.link) : undefined;
  const about = { workflowId: ref.workflowId, task: ref.task, term: ref.term, recipient: link.recipient };
  if (idempotencyKey) {
    const existing = await signalByIdempotencyKey(q, ctx.s, { workflowId: ref.workflowId, key: term.signal, idempotencyKey, payload });
    if (existing) {
      const { same_payload, ...signal } = existing;
      if (!same_payload) throw new CallbackUsedError();
      return { ...about, replayed: true, signal, resolved: [] };
    }
  }
  const gone = goneReason(link, ctx.now);
  if (gone) throw new CallbackGoneError(gone);
  const problems = outputProblems(term.callback.schema, payload);
  if (problems.length > 0) throw new CallbackBodyError(problems);
  const source = { recipient: link.recipient, link: ref.link };
  const result = await emitSignal(q, ctx, ref.workflowId, term.signal, payload, { idempotencyKey, source }, 'link');
  if (!result) throw new CallbackNotFoundError();
  return { ...about, replayed: result.replayed, signal: result.signal, resolved: result.resolved };
}
