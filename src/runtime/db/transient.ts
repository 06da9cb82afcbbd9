/**
 * Whether a failed statement may succeed when run again unchanged: the connection was lost or refused, the
 * server is starting or shutting down, out of connections or resources, or the transaction lost a deadlock or
 * serialization race. Anything else (bad data, a constraint, a bug) fails the same way every time.
 */
/** What pg and PGlite say when the connection, not the statement, failed. */
const TRANSIENT_MESSAGE = new RegExp(
  [
    'connection (terminated|error)',
    'terminated unexpectedly',
    'timeout exceeded when trying to connect',
    'query read timeout',
    'not queryable',
    'ECONN',
    'socket hang up',
  ].join('|'),
  'i',
);

export function isTransientError(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) {
    // no SQLSTATE: a socket error, a connect timeout, a connection that ended under a query
    if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
    const message = error instanceof Error ? error.message : '';
    return TRANSIENT_MESSAGE.test(message) && !/after calling end|pool is ended|was closed/i.test(message);
  }
  return (
    code.startsWith('08') || // connection exception
    code.startsWith('53') || // insufficient resources (too many connections, out of memory, disk full)
    code.startsWith('57P') || // admin or crash shutdown, cannot connect now
    code === '40001' || // serialization failure
    code === '40P01' || // deadlock detected
    code === '55P03' || // lock not available
    code === '58000' || // system error
    code === '58030' // io error
  );
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
]);

/**
 * Whether a transient failure is the connection's or the server's as a whole (every statement would fail alike)
 * rather than one of contention on some rows (a deadlock, a serialization failure, a lock not available).
 */
export function isConnectionError(error: unknown): boolean {
  if (!isTransientError(error)) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || code.startsWith('57P') || code === '53300';
}
