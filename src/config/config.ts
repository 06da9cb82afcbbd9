import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ErrorObject } from 'ajv';
import { type Diagnostic, didYouMean, sortDiagnostics } from '../compiler/diagnostics.js';
import { MAX_TASK_TIMEOUT_MS, parseDuration } from '../compiler/duration.js';
import { readSource } from '../compiler/load.js';
import { parseSource } from '../compiler/parse.js';
import { checkUserSchema } from '../compiler/rules/inputs-schema.js';
import { configSchemaValidator } from '../compiler/schemas.js';
import { maxOutputProblem } from '../compiler/size.js';
import type { Path, Reporter } from '../compiler/source.js';

/** The file names a project config may have, in the order they are looked for. */
export const CONFIG_FILES = ['braid.config.yaml', 'braid.config.yml', 'braid.config.json'];

/** A project's config (SPEC "Project config"), with its durations in milliseconds. */
export interface ProjectConfig {
  /** The config file, and the folder its paths are relative to. */
  file: string;
  root: string;
  definitions?: string | string[];
  ignore: string[];
  tests?: string[];
  handlers?: string;
  /** As written (`${VAR}` not yet read). */
  database?: string;
  schema?: string;
  queues?: Record<string, number>;
  /** Per handler kind: the JSON Schema of its output (kinds.<kind>.returns), its largest output, its HTTP endpoint. */
  kinds: Record<string, KindConfig>;
  worker: {
    heartbeatMs?: number;
    deadAfterMs?: number;
    stallLimitMs?: number;
    leaderLeaseMs?: number;
    prefetch?: number;
    shutdownTimeoutMs?: number;
    logLines?: number;
    logBytes?: number;
  };
  limits: { forEachItems?: number; planTasks?: number; celCost?: number };
  /** How long a write waits for a workflow another transaction holds (limits.lock_timeout). */
  lockTimeoutMs?: number;
  /** The client-side deadline of each braid statement (limits.statement_timeout). */
  statementTimeoutMs?: number;
  /** The keys that sign callback links, as written (`${VAR}` not yet read). */
  secret?: string;
  /** How many days audit lines are kept (default 365). */
  auditDays?: number;
  /** The data keys sensitive values are encrypted with (${VAR}s read; BRAID_KEYS wins). */
  keys?: string;
  /** Where this deployment's braid server is reached, for callback links' URLs. */
  publicUrl?: string;
  /** The events triggers may name: each one's payload schema, and the signature its webhook must carry. */
  events: Record<string, EventConfig>;
}

/** One kind of the config's `kinds:`. */
export interface KindConfig {
  returns?: Record<string, unknown>;
  max_output?: number | string;
  /** Served by a worker outside this project (a protocol worker of this name, such as braid's Python one). */
  worker?: string;
  /** Served over HTTP (url and header values as written: `${VAR}` not yet read). */
  http?: { url: string; timeout?: string; secret_env?: string; headers?: Record<string, string> };
}

/** One event of the config's `events:`. */
export interface EventConfig {
  schema?: Record<string, unknown>;
  /**
   * POST /api/events/NAME must carry a signature of its body, keyed by the secret in env `secret_env`: by `scheme`
   * (braid, stripe, github; hmac-sha256 in `header`), its time within `tolerance`, never seen before within it.
   */
  signature?: {
    scheme?: 'braid' | 'stripe' | 'github' | 'hmac-sha256';
    header?: string;
    secret_env: string;
    algorithm?: 'sha1' | 'sha256' | 'sha512';
    encoding?: 'hex' | 'base64';
    prefix?: string;
    tolerance?: string;
  };
}

/** The config file for a folder: in it or in the nearest folder above that has one. */
export function findConfigFile(from: string): string | undefined {
  let dir = from;
  for (;;) {
    for (const name of CONFIG_FILES) {
      const path = join(dir, name);
      if (existsSync(path)) return path;
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * Reads and checks a config file: YAML or JSON with positions, then its JSON Schema; every problem is a
 * diagnostic at its file:line:col (rule `config`, or the YAML rules for syntax). No config when any is an error.
 */
export function loadConfig(file: string, display = file): { config?: ProjectConfig; diagnostics: Diagnostic[] } {
  const { reporter, value } = parseSource({ ...readSource(file), path: display });
  if (reporter.errorCount > 0 || value === undefined) return { diagnostics: reporter.diagnostics };
  const validate = configSchemaValidator();
  if (typeof value === 'object' && value !== null) checkDurationRanges(value as RawConfig, reporter);
  if (value !== null && !validate(value)) {
    for (const e of relevant(validate.errors ?? [])) {
      const { message, path, hint, at } = describe(e);
      reporter.report('config', message, { path, at }, hint);
    }
    return { diagnostics: sortDiagnostics(reporter.diagnostics) };
  }
  const raw = (value ?? {}) as RawConfig;
  for (const [kind, k] of Object.entries(raw.kinds ?? {})) {
    if (k.returns !== undefined) checkUserSchema(k.returns, ['kinds', kind, 'returns'], `kinds.${kind}.returns`, 'config', reporter);
    const tooLarge = k.max_output === undefined ? undefined : maxOutputProblem(k.max_output);
    if (tooLarge) reporter.report('config', `kinds.${kind}.${tooLarge}`, { path: ['kinds', kind, 'max_output'] });
  }
  for (const [event, e] of Object.entries(raw.events ?? {}))
    if (e.schema !== undefined) checkUserSchema(e.schema, ['events', event, 'schema'], `events.${event}.schema`, 'config', reporter);
  if (reporter.errorCount > 0) return { diagnostics: sortDiagnostics(reporter.diagnostics) };
  const ms = (d: string | undefined) => (d === undefined ? undefined : parseDuration(d));
  return {
    diagnostics: reporter.diagnostics,
    config: {
      file,
      root: dirname(file),
      definitions: raw.definitions,
      ignore: raw.ignore ?? [],
      tests: raw.tests,
      handlers: raw.handlers,
      database: raw.database,
      schema: raw.schema,
      queues: raw.queues,
      kinds: raw.kinds ?? {},
      worker: {
        heartbeatMs: ms(raw.worker?.heartbeat),
        deadAfterMs: ms(raw.worker?.dead_after),
        stallLimitMs: ms(raw.worker?.stall_limit),
        leaderLeaseMs: ms(raw.worker?.leader_lease),
        prefetch: raw.worker?.prefetch,
        shutdownTimeoutMs: ms(raw.worker?.shutdown_timeout),
        logLines: raw.worker?.log_lines,
        logBytes: raw.worker?.log_bytes,
      },
      limits: { forEachItems: raw.limits?.for_each_items, planTasks: raw.limits?.plan_tasks, celCost: raw.limits?.cel_cost },
      lockTimeoutMs: ms(raw.limits?.lock_timeout),
      statementTimeoutMs: ms(raw.limits?.statement_timeout),
      secret: raw.secret,
      auditDays: raw.audit_days,
      keys: raw.keys,
      publicUrl: raw.public_url,
      events: raw.events ?? {},
    },
  };
}

/** Each duration is a timer's or a Postgres setting's: from 1ms to 24d (a timer waits at most 2^31-1 ms). */
function checkDurationRanges(raw: RawConfig, reporter: Reporter): void {
  const sections = { worker: raw.worker, limits: raw.limits } as Record<string, unknown>;
  for (const [section, values] of Object.entries(sections)) {
    if (typeof values !== 'object' || values === null) continue;
    for (const [key, text] of Object.entries(values)) {
      if (typeof text !== 'string') continue;
      const ms = parseDuration(text);
      if (ms !== undefined && (ms < 1 || ms > MAX_TASK_TIMEOUT_MS))
        reporter.report('config', `${section}.${key}: must be from 1ms to 24d, got ${text}`, { path: [section, key] });
    }
  }
}

interface RawConfig {
  definitions?: string | string[];
  ignore?: string[];
  tests?: string[];
  handlers?: string;
  database?: string;
  schema?: string;
  queues?: Record<string, number>;
  kinds?: Record<string, KindConfig>;
  worker?: {
    heartbeat?: string;
    dead_after?: string;
    stall_limit?: string;
    leader_lease?: string;
    prefetch?: number;
    shutdown_timeout?: string;
    log_lines?: number;
    log_bytes?: number;
  };
  limits?: { for_each_items?: number; plan_tasks?: number; cel_cost?: number; lock_timeout?: string; statement_timeout?: string };
  secret?: string;
  audit_days?: number;
  keys?: string;
  public_url?: string;
  events?: Record<string, EventConfig>;
}

/** `${VAR}` references read from the environment; unset variables are empty. */
export function expandEnv(text: string, env: NodeJS.ProcessEnv = process.env): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? '');
}

/** A oneOf's branches each report: the one closest to the value is enough. */
function relevant(errors: ErrorObject[]): ErrorObject[] {
  const oneOfPaths = new Set(errors.filter((e) => e.keyword === 'oneOf').map((e) => e.instancePath));
  return errors.filter(
    (e) =>
      // a bad property name reports once, as propertyNames (not also as the pattern it failed); an if/then says
      // its failed `then` as that (a missing key), not also as "must match then"
      e.propertyName === undefined && e.keyword !== 'if' && (e.keyword === 'oneOf' || !oneOfPaths.has(e.instancePath) || e.keyword === 'additionalProperties'),
  );
}

const KNOWN: Record<string, string[]> = {
  '': [
    'definitions',
    'ignore',
    'tests',
    'handlers',
    'database',
    'schema',
    'queues',
    'kinds',
    'worker',
    'limits',
    'secret',
    'audit_days',
    'keys',
    'public_url',
    'events',
  ],
  '/worker': ['heartbeat', 'dead_after', 'stall_limit', 'leader_lease', 'prefetch', 'shutdown_timeout', 'log_lines', 'log_bytes'],
  '/limits': ['for_each_items', 'plan_tasks', 'cel_cost', 'lock_timeout', 'statement_timeout'],
};

function describe(e: ErrorObject): { message: string; path: Path; hint?: string; at?: 'key' | 'value' } {
  const path: Path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const where = path.length > 0 ? path.join('.') : 'the config';
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(e.params.additionalProperty);
      const known = KNOWN[e.instancePath] ?? [];
      const guess = didYouMean(key, known);
      return {
        message: `${where}: unknown key "${key}"`,
        path: [...path, key],
        at: 'key',
        hint: guess ? `did you mean "${guess}"?` : known.length ? `allowed keys: ${known.join(', ')}` : undefined,
      };
    }
    case 'oneOf':
      return { message: `${where}: a folder, or a list of globs`, path };
    case 'pattern':
      return {
        message: `${where}: ${path[0] === 'worker' ? 'not a duration (250ms, 30s, 15m, 2h, 7d or ISO 8601)' : `must match ${String(e.params.pattern)}`}`,
        path,
      };
    // the schema's one `not`: a kind served both ways
    case 'not':
      return { message: `${where}: a kind is served over HTTP (http:) or by another worker (worker:), not both`, path };
    case 'propertyNames':
      return { message: `${where}: invalid name "${String(e.params.propertyName)}"`, path: [...path, String(e.params.propertyName)], at: 'key' };
    default:
      return { message: `${where}: ${e.message ?? 'invalid'}`, path };
  }
}
