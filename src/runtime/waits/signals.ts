/**
 * Signals: emitting one persists it and evaluates the waits that declare its key, in one transaction under
 * the workflow's lock; reads are workflow-wide (audit) or task-scoped (what a task's wait may see).
 */

import { declaredKeys } from '../../compiler/declared-keys.js';
import { didYouMean } from '../../compiler/diagnostics.js';
import { atPointer, findUnstorable } from '../core/storable.js';
import type { Queryable } from '../db/types.js';
import { listSignals, type SignalPage, signalScope } from '../sql/signals.js';
import type { SignalRow } from './decide.js';

export interface EmitOptions {
  /** One row per (workflow, key, idempotency key): a replay with the same payload returns the original row. */
  idempotencyKey?: string;
  /** Who or what sent it (JSON), kept with the row. */
  source?: unknown;
  /** The workflow attempt the sender means: a signal for an earlier attempt is refused. */
  attempt?: number;
  /** Store it even when no task of the workflow waits on its key (by default that is refused, as a typo). */
  anyKey?: boolean;
  /**
   * The W3C traceparent (and tracestate) of the sender's span, when it is not the active OpenTelemetry context
   * (a request's header, `braid signal --traceparent`): the signal's span continues that trace.
   */
  traceparent?: string;
  tracestate?: string;
}

export interface EmitResult {
  signal: SignalRow;
  /** True when an idempotency key replayed an existing row (nothing new was written). */
  replayed: boolean;
  /** Tasks whose wait this signal resolved. */
  resolved: string[];
}

export class SignalPayloadMismatchError extends Error {
  readonly code = 'signal_payload_mismatch' as const;
  constructor(
    readonly key: string,
    readonly idempotencyKey: string,
    readonly original: SignalRow,
  ) {
    super(`signal "${key}" with idempotency key "${idempotencyKey}" was already emitted (id ${original.id}) with a different payload`);
    this.name = 'SignalPayloadMismatchError';
  }
}

export class SignalAttemptMismatchError extends Error {
  readonly code = 'signal_attempt_mismatch' as const;
  constructor(
    readonly attempt: number,
    readonly current: number,
  ) {
    super(`the signal is for attempt ${attempt}, but the workflow is on attempt ${current}`);
    this.name = 'SignalAttemptMismatchError';
  }
}

export class UndeclaredSignalKeyError extends Error {
  readonly code = 'signal_key_undeclared' as const;
  constructor(task: string, key: string, declared: string[]) {
    super(`task "${task}" does not declare signal key "${key}" (its wait declares: ${declared.length ? declared.join(', ') : 'none'})`);
    this.name = 'UndeclaredSignalKeyError';
  }
}

/** A key that no task of the workflow (as extended) waits on: most likely a typo, so it is not stored. */
export class UnknownSignalKeyError extends Error {
  readonly code = 'signal_key_unknown' as const;
  constructor(workflowId: string, key: string, waited: readonly string[]) {
    const guess = didYouMean(key, waited);
    super(
      `no task of workflow ${workflowId} waits on signal key "${key}"` +
        (guess ? ` (did you mean "${guess}"?)` : waited.length > 0 ? ` (its waits read: ${waited.join(', ')})` : ' (none of its tasks waits on a signal)') +
        '; send it anyway with --any-key (any_key in the API, anyKey in the library)',
    );
    this.name = 'UnknownSignalKeyError';
  }
}

export class WorkflowFinishedError extends Error {
  readonly code = 'workflow_finished' as const;
  constructor(
    readonly workflowId: string,
    readonly state: string,
  ) {
    super(`workflow ${workflowId} is ${state}: it takes no more signals (retry it first to run it again)`);
    this.name = 'WorkflowFinishedError';
  }
}

export class InvalidSignalError extends Error {
  readonly code = 'signal_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'InvalidSignalError';
  }
}

const MAX_KEY_LENGTH = 200;
const MAX_PAYLOAD_BYTES = 1024 * 1024;
const MAX_PAGE = 1000;

/** Checks what can be checked before touching the database. */
export function checkSignal(key: unknown, payload: unknown, options: EmitOptions): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH || /[\u0000-\u001f]/.test(key) || findUnstorable(key)) {
    throw new InvalidSignalError(
      `a signal key is a non-empty string of at most ${MAX_KEY_LENGTH} characters without control characters or unpaired surrogates`,
    );
  }
  for (const [what, value] of [
    ['payload', payload],
    ['source', options.source],
  ] as const) {
    if (value === undefined) continue;
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      throw new InvalidSignalError(`the signal's ${what} is not JSON: ${(error as Error).message}`);
    }
    if (text === undefined) throw new InvalidSignalError(`the signal's ${what} is not JSON`);
    if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) throw new InvalidSignalError(`the signal's ${what} is over ${MAX_PAYLOAD_BYTES} bytes of JSON`);
    const bad = findUnstorable(value, text);
    if (bad) throw new InvalidSignalError(`the signal's ${what} holds ${bad.what}${atPointer(bad)}, which Postgres cannot store`);
  }
  const ik = options.idempotencyKey;
  if (ik !== undefined && (typeof ik !== 'string' || ik.length === 0 || ik.length > MAX_KEY_LENGTH || /[\u0000-\u001f]/.test(ik) || findUnstorable(ik))) {
    throw new InvalidSignalError(
      `an idempotency key is a non-empty string of at most ${MAX_KEY_LENGTH} characters without control characters or unpaired surrogates`,
    );
  }
  if (options.attempt !== undefined && !(Number.isInteger(options.attempt) && options.attempt >= 1))
    throw new InvalidSignalError('attempt is a whole number from 1');
}

export interface ListOptions {
  /** Only this workflow attempt's signals. */
  attempt?: number;
  key?: string;
  /** The `next_cursor_id` of the previous page. */
  cursorId?: string;
  /** Page size (default 100, at most 1000). */
  limit?: number;
  /** Payloads as shown to people: sensitive values [redacted]. */
  redact?: boolean;
}

/** Workflow-wide signals in id order (audit views), paged by cursor. */
export function listWorkflowSignals(q: Queryable, s: string, workflowId: string, options: ListOptions = {}): Promise<SignalPage> {
  return listSignals(q, s, {
    workflowId,
    attempt: options.attempt,
    keys: options.key === undefined ? undefined : [options.key],
    cursorId: options.cursorId,
    limit: pageSize(options.limit),
  });
}

export interface TaskScopedOptions {
  /** Also show signals emitted after the wait resolved. */
  includeAfterResolution?: boolean;
  /** Payloads as shown to people: sensitive values [redacted]. */
  redact?: boolean;
}

/**
 * What a task's wait may see: only the keys it declares, the current attempt's rows, and once the wait
 * resolved, only rows up to its evidence boundary (unless includeAfterResolution).
 */
export async function listTaskSignals(
  q: Queryable,
  s: string,
  workflowId: string,
  task: string,
  options: TaskScopedOptions & { key?: string; cursorId?: string; limit?: number; newestFirst?: boolean } = {},
): Promise<SignalPage | undefined> {
  const t = await signalScope(q, s, workflowId, task);
  if (!t) return undefined;
  const declared = t.wait ? declaredKeys(t.wait) : [];
  if (options.key !== undefined && !declared.includes(options.key)) throw new UndeclaredSignalKeyError(task, options.key, declared);
  if (declared.length === 0) return { signals: [], next_cursor_id: null, has_more: false };
  return listSignals(q, s, {
    workflowId,
    attempt: t.attempt,
    keys: options.key === undefined ? declared : [options.key],
    cursorId: options.cursorId,
    upToId: t.wait_evidence && !options.includeAfterResolution ? t.wait_evidence.boundary : null,
    limit: pageSize(options.limit),
    newestFirst: options.newestFirst,
  });
}

function pageSize(limit: number | undefined): number {
  if (limit === undefined) return 100;
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidSignalError('limit is a whole number from 1');
  return Math.min(limit, MAX_PAGE);
}
