/**
 * Every error braid gives a caller has a code from this closed set. The code goes out to API clients as `code`
 * (beside the message), and this one table decides each code's HTTP status and the CLI's exit class: `failed`
 * (exit 1: the subject failed) or `internal` (exit 3). Users' scripts may depend on the codes: never rename one.
 */
export const ERROR_CODES = {
  // the request or the input
  bad_request: { http: 400, exit: 'failed' },
  value_unstorable: { http: 400, exit: 'failed' },
  signal_invalid: { http: 400, exit: 'failed' },
  signal_key_undeclared: { http: 400, exit: 'failed' },
  extension_invalid: { http: 400, exit: 'failed' },
  diagnostics_unavailable: { http: 400, exit: 'failed' },
  cursor_invalid: { http: 400, exit: 'failed' },
  workflow_id_invalid: { http: 400, exit: 'failed' },
  // an operator action (pause, a task action, a bulk operation) asked wrongly
  operation_invalid: { http: 400, exit: 'failed' },
  inputs_invalid: { http: 422, exit: 'failed' },
  signal_key_unknown: { http: 422, exit: 'failed' },
  // a library caller's tx that is not a transaction (a client without BEGIN, a pool): nothing was written
  tx_not_in_transaction: { http: 400, exit: 'failed' },
  // what was asked for is not there
  workflow_not_found: { http: 404, exit: 'failed' },
  workflow_not_registered: { http: 404, exit: 'failed' },
  task_not_found: { http: 404, exit: 'failed' },
  definition_not_found: { http: 404, exit: 'failed' },
  definition_ambiguous: { http: 400, exit: 'failed' },
  schedule_not_found: { http: 404, exit: 'failed' },
  backfill_range: { http: 400, exit: 'failed' },
  route_not_found: { http: 404, exit: 'failed' },
  pause_not_found: { http: 404, exit: 'failed' },
  operation_not_found: { http: 404, exit: 'failed' },
  user_not_found: { http: 404, exit: 'failed' },
  // it conflicts with what is stored
  signal_payload_mismatch: { http: 409, exit: 'failed' },
  signal_attempt_mismatch: { http: 409, exit: 'failed' },
  workflow_finished: { http: 409, exit: 'failed' },
  workflow_not_final: { http: 409, exit: 'failed' },
  workflow_conflict: { http: 409, exit: 'failed' },
  workflow_not_movable: { http: 409, exit: 'failed' },
  // a task action on a task whose state does not allow it (a running one without --force, a final one)
  task_state_conflict: { http: 409, exit: 'failed' },
  // a task completed by hand with an output its returns schema refuses
  output_invalid: { http: 422, exit: 'failed' },
  // it is held by another transaction past the lock timeout: try again (HTTP answers carry Retry-After)
  workflow_busy: { http: 503, exit: 'failed' },
  // a callback link: forged, damaged or of nothing there (one answer, so a guess learns nothing); past its time;
  // a body its schema refuses; already used with another body
  callback_not_found: { http: 404, exit: 'failed' },
  callback_term_unknown: { http: 404, exit: 'failed' },
  callback_gone: { http: 410, exit: 'failed' },
  callback_invalid: { http: 422, exit: 'failed' },
  callback_used: { http: 409, exit: 'failed' },
  // links are asked for where no signing key is configured (config secret, BRAID_SECRET)
  secret_missing: { http: 400, exit: 'failed' },
  // an event braid cannot take: a bad name or id, a payload its schema refuses
  event_invalid: { http: 422, exit: 'failed' },
  // a signed webhook sent again within its tolerance window: a replay, nothing recorded
  event_replayed: { http: 409, exit: 'failed' },
  rate_limited: { http: 429, exit: 'failed' },
  // the HTTP exchange itself
  unauthorized: { http: 401, exit: 'failed' },
  forbidden: { http: 403, exit: 'failed' },
  method_not_allowed: { http: 405, exit: 'failed' },
  body_too_large: { http: 413, exit: 'failed' },
  // a JSON body nested deeper than braid takes (JSON_DEPTH_LIMIT)
  json_too_deep: { http: 400, exit: 'failed' },
  unsupported_media_type: { http: 415, exit: 'failed' },
  // braid's side
  database_unavailable: { http: 503, exit: 'internal' },
  database_locked: { http: 503, exit: 'internal' },
  database_damaged: { http: 500, exit: 'internal' },
  internal: { http: 500, exit: 'internal' },
} as const satisfies Record<string, { http: number; exit: 'failed' | 'internal' }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An error that carries its code. */
export interface CodedError extends Error {
  readonly code: ErrorCode;
}

export function isCoded(error: unknown): error is CodedError {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/** An error caused by what the caller asked (exit 1, HTTP 4xx), as opposed to a failure of braid or its database. */
export function isCallerError(error: unknown): error is CodedError {
  return isCoded(error) && ERROR_CODES[error.code].exit === 'failed';
}

export function httpStatus(code: ErrorCode): number {
  return ERROR_CODES[code].http;
}
