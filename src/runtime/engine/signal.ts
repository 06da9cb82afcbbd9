/**
 * A signal's sequence: stored under its workflow's lock and judged by the waits that declare its key, in the
 * caller's transaction (SPEC "Signals commit with the evaluation they trigger").
 */
import { isDeepStrictEqual } from 'node:util';
import { CALLBACK_KEY_PREFIX } from '../../compiler/callback-key.js';
import { SensitiveKeysMissingError, sealPaths } from '../core/sensitive.js';
import type { Queryable } from '../db/types.js';
import { insertSignal, signalByIdempotencyKey, waitedKeys } from '../sql/signals.js';
import { loadWaitWorkflow, type WaitWorkflow } from '../sql/waits.js';
import { checkTraceParent } from '../telemetry/traceparent.js';
import { continued } from '../telemetry/tracing.js';
import { checkSignalPayload, signalPayloadRules } from '../waits/signal-payloads.js';
import {
  checkSignal,
  type EmitOptions,
  type EmitResult,
  InvalidSignalError,
  SignalAttemptMismatchError,
  SignalPayloadMismatchError,
  UnknownSignalKeyError,
  WorkflowFinishedError,
} from '../waits/signals.js';
import { evaluateWaits } from './advance.js';
import type { AdvanceContext } from './context.js';

/**
 * The payload as it is stored: checked against its key's term schemas (a link's body was checked against its
 * callback's schema already), its sensitive fields sealed; the same object when the definition declares nothing.
 */
async function storedPayload(q: Queryable, ctx: AdvanceContext, w: WaitWorkflow, key: string, payload: unknown, check: boolean): Promise<unknown> {
  const def = await ctx.definitions.find(q, w.name, w.definition_hash);
  const rules = def && signalPayloadRules(def, key);
  if (!rules) return payload;
  if (check) checkSignalPayload(rules, key, payload);
  if (rules.sensitive.length === 0) return payload;
  if (!ctx.dataKeys) throw new SensitiveKeysMissingError(w.name, `the payload of signal "${key}"`);
  return sealPaths(payload, rules.sensitive, ctx.dataKeys, new Set());
}

/**
 * Emits a signal in the caller's transaction: takes the workflow's lock (so the id is assigned in commit
 * order and concurrent emits serialise), honours the idempotency key, stores the row, and evaluates the
 * waiting tasks that declare the key. Returns undefined when the workflow does not exist.
 */
export async function emitSignal(
  q: Queryable,
  ctx: AdvanceContext,
  workflowId: string,
  key: string,
  payload: unknown,
  options: EmitOptions,
  from: 'caller' | 'link' = 'caller',
): Promise<EmitResult | undefined> {
  checkSignal(key, payload, options);
  // a callback term's signals come through its links, whose checks (the body's schema, expiry) they owe
  if (from === 'caller' && key.startsWith(CALLBACK_KEY_PREFIX))
    throw new InvalidSignalError(`signal key "${key}" is a callback term's: its links send it (braid callback-url)`);
  const caller = checkTraceParent(options.traceparent, options.tracestate);
  const w = await loadWaitWorkflow(q, ctx.s, workflowId, { lock: true });
  if (!w) return undefined;
  const attempt = w.attempt;
  if (options.attempt !== undefined && options.attempt !== attempt) throw new SignalAttemptMismatchError(options.attempt, attempt);
  const body = payload === undefined ? null : payload;
  const stored = await storedPayload(q, ctx, w, key, body, from === 'caller');
  if (options.idempotencyKey !== undefined) {
    // a replay of a signal that was accepted is answered as before, even once the workflow finished
    const existing = await signalByIdempotencyKey(q, ctx.s, { workflowId, key, idempotencyKey: options.idempotencyKey, payload: body });
    if (existing) {
      const { same_payload, ...signal } = existing;
      // a sealed payload differs from its clear text in SQL: compared as read (opened)
      if (!(stored === body ? same_payload : isDeepStrictEqual(signal.payload, body)))
        throw new SignalPayloadMismatchError(key, options.idempotencyKey, signal);
      return { signal, replayed: true, resolved: [] };
    }
  }
  // nothing would ever read it: the sender is told, rather than the signal stored where no wait looks
  if (w.state !== 'running') throw new WorkflowFinishedError(workflowId, w.state);
  // the sender's span: the waits this signal resolves link to it
  const span =
    ctx.tracing?.begin(
      `braid.signal ${key}`,
      'producer',
      { 'braid.workflow.id': workflowId, 'braid.workflow.name': w.name, 'braid.signal.key': key },
      ctx.tracing.callerContext(caller),
    ) ?? null;
  try {
    const inserted = await insertSignal(q, ctx.s, {
      workflowId,
      key,
      payload: stored,
      source: options.source,
      idempotencyKey: options.idempotencyKey ?? null,
      attempt,
      now: ctx.now,
      anyKey: options.anyKey === true,
      traceContext: continued(span, caller),
    });
    if (!inserted) throw new UnknownSignalKeyError(workflowId, key, await waitedKeys(q, ctx.s, workflowId));
    const { row: signal, previousId, waiting } = inserted;
    const pass = await evaluateWaits(q, ctx, workflowId, { key }, { workflow: w, emitted: { row: signal, previousId }, tasks: waiting });
    ctx.tracing?.end(span, undefined, { 'braid.signal.id': signal.id, 'braid.wait.resolved': pass.resolved });
    return { signal, replayed: false, resolved: pass.resolved };
  } catch (error) {
    ctx.tracing?.fail(span, error);
    throw error;
  }
}
