/**
 * The runtime's public face: all that the package's entry (src/index.ts), the CLI, the HTTP API, braid test
 * and braid dev import of it at run time (types they may take from where they are declared; the web UI takes
 * records from wire/ alone). The architecture test holds every caller to this module.
 */

// what braid's own commands and servers use beyond it: defaults, the embedded database's image and lock, the
// console logger, error text, trace parents, drain labels, the change feed's registration
import { parseToken } from './access/user-tokens.js';

export type { RotationProgress } from './access/key-rotation.js';
export { type AddUser, UserError } from './access/users.js';
export type { ActorOptions } from './core/actor.js';
export { errorMessage } from './core/describe-error.js';
export { UnstorableValueError } from './core/storable.js';
// the package's public API (src/index.ts exports these)
export { createPglite, DatabaseDamagedError, DatabaseLockedError, lockHolder, type PgliteOptions } from './db/pglite.js';
export { createPostgres, type PostgresOptions } from './db/postgres.js';
export { isTransientError } from './db/transient.js';
export { type Database, ping, type Queryable, TxNotInTransactionError, type TxOption } from './db/types.js';
export { drainLabel } from './deploys/in-flight.js';
export type { RetryMode } from './engine/decide.js';
export { type RetryResult, WorkflowNotFinalError } from './engine/retry.js';
export type { StartOutput } from './engine/start-children.js';
export {
  BatchRowError,
  ExtensionError,
  InvalidCursorError,
  UnknownWorkflowError,
  WORKFLOW_ID,
  WorkflowConflictError,
  WorkflowNotFoundError,
} from './errors.js';
export type { BulkCreated, BulkRequest, BulkRunOptions } from './incidents/bulk.js';
export { OperationInvalidError, OperationNotFoundError, OutputInvalidError, PauseNotFoundError, TaskStateConflictError } from './incidents/errors.js';
export type { BulkOps } from './incidents/ops.js';
export type { Pauses } from './incidents/pauses.js';
export type { TaskActionOptions, TaskActionResult } from './incidents/task-actions.js';
export type { TaskAction } from './incidents/task-decide.js';
export type { CallbackReceipt } from './outside/callbacks.js';
export {
  CallbackBodyError,
  CallbackGoneError,
  CallbackNotFoundError,
  CallbackTermUnknownError,
  CallbackUsedError,
  EventInvalidError,
  EventPayloadError,
  EventReplayedError,
  EventSignatureError,
  SecretMissingError,
} from './outside/errors.js';
export type { EmitEventOptions } from './outside/event-ops.js';
export { parseKeyRing, SecretConfigError } from './outside/secrets.js';
export { ROLES, type Role, type UserRecord } from './wire/index.js';
export { DEFAULT_TOLERANCE_S, verifySignature } from './worker/http-signature.js';

/** The id of a user token (what a session remembers of it), or undefined for anything else. */
export const userTokenId = (token: string): string | undefined => parseToken(token)?.tokenId;
export { changeListeners } from './reads/change-listeners.js';
export {
  createRuntime,
  DEFAULT_CONCURRENCY,
  DEFAULT_DEAD_AFTER_MS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_SCHEMA,
  MAX_START_BATCH,
  Runtime,
  type RuntimeOptions,
  type StartManyOptions,
  type StartOptions,
} from './runtime.js';
// what braid test needs beyond the API: emptying the run tables between tests, whether work is available or
// maintenance is due at the virtual time, the record of each ended run (coverage), a name's current definition,
// and a test's schedules deployed on its virtual clock
export { deployTestSchedules } from './schedules/deploy.js';
export { cachedImage, keepMigratedImage, migratedDatabase } from './setup/embedded-image.js';
export { migrate } from './setup/migrate.js';
export { currentDefinition } from './sql/definitions.js';
export { anyAvailable, maintenanceDue } from './sql/next-due.js';
export { recordEnded, resetRuns } from './sql/reset.js';
export { consoleLogger, rateLimitedWarnings } from './telemetry/log.js';
export type { Metrics } from './telemetry/metrics.js';
export { parseTraceParent } from './telemetry/traceparent.js';

/** The metrics class, loaded when asked for (prom-client costs a CLI command that serves no metrics 15 ms). */
export async function loadMetrics(): Promise<typeof import('./telemetry/metrics.js').Metrics> {
  return (await import('./telemetry/metrics.js')).Metrics;
}
export { DiagnosticsError } from './waits/diagnostics.js';
export {
  type EmitOptions,
  type EmitResult,
  InvalidSignalError,
  type ListOptions,
  SignalAttemptMismatchError,
  SignalPayloadMismatchError,
  type TaskScopedOptions,
  UndeclaredSignalKeyError,
  WorkflowFinishedError,
} from './waits/signals.js';
export {
  defineHandlers,
  type ExprTermEvidence,
  type ExtensionSpec,
  type Handler,
  type Handlers,
  NonRetryableError,
  type SignalTermEvidence,
  TaskCancelled,
  type TaskContext,
  TaskSnoozed,
  TaskTimeout,
  type TaskWait,
  type TimerTermEvidence,
  type WaitOf,
  type WaitTermEvidence,
  type WorkflowsTermEvidence,
} from './worker/handlers.js';
export { DEFAULT_HTTP_TIMEOUT_MS, type HttpKind, type HttpTaskRequest, httpHandler, withHttpKinds } from './worker/http-handler.js';
export { loadHandlers } from './worker/load-handlers.js';
export { WorkflowHandle, WorkflowSignals } from './workflow-handle.js';
