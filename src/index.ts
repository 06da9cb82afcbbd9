export { formatDiagnostics, type OutputFormat } from './compiler/format/index.js';
export { type GraphFormat, renderGraph } from './compiler/graph.js';
export * from './compiler/index.js';
export { createPglite, DatabaseDamagedError, DatabaseLockedError, type PgliteOptions } from './runtime/db/pglite.js';
export { createPostgres, type PostgresOptions } from './runtime/db/postgres.js';
export { type Database, type Queryable, TxNotInTransactionError, type TxOption } from './runtime/db/types.js';
export type { RetryMode } from './runtime/engine/decide.js';
export { ExtensionError, type ExtensionSpec } from './runtime/engine/extend.js';
export { type RetryResult, WorkflowNotFinalError } from './runtime/engine/retry.js';
export type { StartOutput } from './runtime/engine/start-children.js';
export { BatchRowError, UnknownWorkflowError, WorkflowConflictError, WorkflowNotFoundError } from './runtime/errors.js';
export { Metrics } from './runtime/metrics.js';
export { migrate } from './runtime/migrate.js';
export { createRuntime, MAX_START_BATCH, Runtime, type RuntimeOptions, type StartManyOptions, type StartOptions } from './runtime/runtime.js';
export { UnstorableValueError } from './runtime/storable.js';
export { DiagnosticsError } from './runtime/waits/diagnostics.js';
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
} from './runtime/waits/signals.js';
// the records the API serves, as the runtime returns them: one declaration each (runtime/wire.ts)
export type {
  Json,
  SignalPage,
  SignalRow,
  TaskRecord,
  TermValue,
  UpgradeRecord,
  WaitDiagnostics,
  WaitEvidence,
  WaitPhase,
  WaitSnapshot,
  WorkflowPage,
  WorkflowRecord,
  WorkflowState,
  WorkflowStatus,
  WorkflowSummary,
} from './runtime/wire.js';
export {
  defineHandlers,
  type ExprTermEvidence,
  type Handler,
  type Handlers,
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
} from './runtime/worker/handlers.js';
export { loadHandlers } from './runtime/worker/load-handlers.js';
export { WorkflowHandle, WorkflowSignals } from './runtime/workflow-handle.js';
