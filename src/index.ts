export * from './compiler/index.js';
export { formatDiagnostics, type OutputFormat } from './compiler/format/index.js';
export { renderGraph, type GraphFormat } from './compiler/graph.js';
export {
  createRuntime,
  Runtime,
  type RuntimeOptions,
  type StartOptions,
  type WorkflowStatus,
} from './runtime/runtime.js';
export { WorkflowHandle, WorkflowSignals } from './runtime/workflow-handle.js';
export { UnknownWorkflowError, WorkflowNotFoundError } from './runtime/errors.js';
export {
  SignalPayloadMismatchError,
  SignalAttemptMismatchError,
  UndeclaredSignalKeyError,
  InvalidSignalError,
  WorkflowFinishedError,
  type EmitOptions,
  type EmitResult,
  type ListOptions,
  type TaskScopedOptions,
} from './runtime/waits/signals.js';
export type { SignalPage } from './runtime/sql/signals.js';
export type { SignalRow, TermValue, WaitPhase } from './runtime/waits/wait-eval.js';
export type { WaitEvidence } from './runtime/waits/evaluate.js';
export { DiagnosticsError, type WaitDiagnostics } from './runtime/waits/diagnostics.js';
export { WorkflowNotFinalError, type RetryResult } from './runtime/engine/retry.js';
export { ExtensionError, type ExtensionSpec } from './runtime/engine/extend.js';
export type { RetryMode } from './runtime/engine/decide.js';
export type { StartOutput } from './runtime/engine/start-children.js';
export { createPostgres, type PostgresOptions } from './runtime/db/postgres.js';
export { createPglite, DatabaseLockedError, DatabaseDamagedError, type PgliteOptions } from './runtime/db/pglite.js';
export type { Database, Queryable, TxOption } from './runtime/db/types.js';
export { defineHandlers, TaskCancelled, TaskSnoozed, TaskTimeout, type Handler, type Handlers, type TaskContext } from './runtime/worker/handlers.js';
export { loadHandlers } from './runtime/worker/load-handlers.js';
export { migrate } from './runtime/migrate.js';
export type { TaskRecord, WorkflowRecord, WaitSnapshot } from './runtime/sql/workflows.js';
export { UnstorableValueError } from './runtime/engine/storable.js';
