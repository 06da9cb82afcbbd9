import type pg from 'pg';
import type { CompileLimits } from '../compiler/compile-error.js';
import type { Database } from './db/types.js';
import type { RetentionPolicy } from './sql/maintenance.js';
import type { Logger } from './telemetry/log.js';
import type { Metrics } from './telemetry/metrics.js';
import type { MeterProviderLike, TracerProviderLike } from './telemetry/otel-api.js';
import type { Handlers } from './worker/handlers.js';

/** What a runtime is created with (createRuntime). */
export interface RuntimeOptions {
  /**
   * The database: an adapter (createPostgres, createPglite), the application's own `pg.Pool` (braid runs its
   * queries and transactions there and never ends it), or a Postgres connection string. The runtime closes
   * what it opened itself (`close()`).
   */
  database: Database | pg.Pool | string;
  /** The Postgres schema of braid's tables (default `braid`). */
  schema?: string;
  /** Handlers by kind; a runtime without handlers only inserts and reads. */
  handlers?: Handlers;
  /** Queue name -> concurrency (default { default: 10 }). */
  queues?: Record<string, number>;
  /**
   * Tasks per queue claimed ahead of free slots and held in this process until a slot frees (default 0).
   * Raises throughput for short handlers; a prefetched task waits for this process even when another is idle.
   */
  prefetch?: number;
  /** Replaces the database clock (tests). */
  clock?: () => Date;
  logger?: Logger;
  pollIntervalMs?: number;
  /** How often the leader looks for due wait timers (default 1 s); a nearer new timer wakes it sooner. */
  timerIntervalMs?: number;
  /** How often a worker records that it is alive (default 2 s). */
  heartbeatIntervalMs?: number;
  /**
   * A worker silent this long is dead and its running attempts run again elsewhere (default 7 s); an attempt a
   * live worker has failed to record the end of for this long is rescued the same way.
   */
  workerDeadAfterMs?: number;
  /**
   * How long a handler may block a worker's event loop (synchronous work) while a thread of the worker keeps
   * it alive (default 5 min; Postgres only): past it the worker is taken for hung and its attempts run again
   * elsewhere.
   */
  workerStallLimitMs?: number;
  /** The longest a dead leader goes unreplaced (default 5 s): its lease, renewed five times per lease. */
  leaderLeaseMs?: number;
  /** Retention of finalized workflows (null keeps them; defaults 24 h each), and the opt-in per-task mode (taskMs). */
  retention?: Partial<RetentionPolicy>;
  retentionIntervalMs?: number;
  maxOutputBytes?: number;
  /**
   * Counts what this runtime's worker and leader do, and reads queue depth and workflow counts when scraped
   * (`new Metrics(db, schema)`; `metrics.text()` is the Prometheus exposition). None by default.
   */
  metrics?: Metrics;
  /**
   * The OpenTelemetry TracerProvider braid's spans go to (braid.workflow, braid.task, braid.wait, braid.signal);
   * the globally registered one by default. Needs `@opentelemetry/api` installed; with no provider, no spans.
   */
  tracerProvider?: TracerProviderLike;
  /** The OpenTelemetry MeterProvider braid's metrics also go to; the globally registered one by default. */
  meterProvider?: MeterProviderLike;
  /** Bounds of each attempt's ctx.log: lines and bytes stored (defaults 1,000 and 256 KiB); past them, a count. */
  taskLog?: { maxLines?: number; maxBytes?: number };
  /** Run the leader's maintenance in this process (default true when it runs a worker). */
  leader?: boolean;
  /**
   * How long a write of the API (emit, cancel, retry, extend, upgrade, a start by business key) waits for its
   * workflow's lock, held by another transaction, before it fails with WorkflowBusyError (default 5 s).
   */
  lockTimeoutMs?: number;
  /**
   * What one start may grow to (defaults: 10,000 for_each items per task, 100,000 tasks per plan, 1,000,000
   * CEL comprehension steps): a start over them fails with a for-each or cel-cost diagnostic.
   */
  limits?: Partial<CompileLimits>;
  /**
   * The client-side deadline of each braid statement when braid makes the Postgres adapter (from a URL or a
   * pool; default 20 s): a statement past it fails and its connection is closed (createPostgres takes it too).
   */
  statementTimeoutMs?: number;
  /**
   * The keys that sign callback links: `ID:SECRET` pairs, comma separated, the first signing, the others still
   * accepted (default: env BRAID_SECRET). Without one, links cannot be made.
   */
  secret?: string;
  /**
   * The data keys sensitive values are encrypted with: `ID:BASE64` pairs of 32-byte AES keys, comma separated, the
   * first current, the others still read (default: env BRAID_KEYS). Without them, a definition with sensitive
   * fields cannot register or start.
   */
  keys?: string;
  /** The URL this deployment's braid server is reached at, for callback links' full URLs (default: env BRAID_PUBLIC_URL). */
  publicUrl?: string;
}

/**
 * Recovery defaults: a killed worker's attempts run again within dead-after plus one leader pass (~8 s), a
 * killed leader is replaced within its lease (5 s). Each worker heartbeats every 2 s.
 */
export const DEFAULT_HEARTBEAT_MS = 2000;
/** A queue's concurrency when nothing says otherwise. */
export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_DEAD_AFTER_MS = 7000;
/** The schema braid's tables live in when none is given. */
export const DEFAULT_SCHEMA = 'braid';
export const DEFAULT_STALL_LIMIT_MS = 5 * 60_000;
export const DEFAULT_LEADER_LEASE_MS = 5000;
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;
/** How long stopping may go on past the handlers' deadline, recording what ended. */
export const STOP_GRACE_MS = 750;

/** The worker's settings from a runtime's options, defaults filled in. */
export function workerSettings(o: RuntimeOptions) {
  return {
    handlers: o.handlers ?? {},
    queues: { ...(o.queues ?? { default: DEFAULT_CONCURRENCY }) },
    prefetch: o.prefetch ?? 0,
    pollIntervalMs: o.pollIntervalMs ?? 1000,
    heartbeatIntervalMs: o.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_MS,
    abandonAfterMs: o.workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS,
    stallLimitMs: o.workerStallLimitMs ?? DEFAULT_STALL_LIMIT_MS,
    maxOutputBytes: o.maxOutputBytes ?? 1024 * 1024,
    logBounds: o.taskLog,
    limits: o.limits,
  };
}

/** The leader's settings from a runtime's options, defaults filled in. */
export function leaderSettings(o: RuntimeOptions) {
  return {
    leaseMs: o.leaderLeaseMs ?? DEFAULT_LEADER_LEASE_MS,
    promoteIntervalMs: o.pollIntervalMs ?? 1000,
    timerIntervalMs: o.timerIntervalMs ?? 1000,
    workerDeadAfterMs: o.workerDeadAfterMs ?? DEFAULT_DEAD_AFTER_MS,
    retention: { closedMs: 24 * 3_600_000, cancelledMs: 24 * 3_600_000, taskMs: null, auditMs: 365 * 86_400_000, ...o.retention },
    retentionIntervalMs: o.retentionIntervalMs ?? 60_000,
  };
}
