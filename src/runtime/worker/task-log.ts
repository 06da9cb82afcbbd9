/**
 * ctx.log: a handler's lines, kept per attempt in memory until stored. Bounded per attempt (lines and bytes):
 * past the bound a line is only counted, so a handler that logs in a loop keeps the worker's memory flat, and
 * the attempt's last stored line says how much was dropped. Writing a line never throws into the handler.
 */

import { errorMessage } from '../core/describe-error.js';
import { braidJson, braidText, type Scrubbed, Secrets, scrubJson, scrubText } from '../core/privacy.js';
import { storableText } from '../core/storable.js';
import type { Queryable } from '../db/types.js';
import { insertLogLines, type NewLogLine } from '../sql/task-logs.js';
import type { Logger } from '../telemetry/log.js';
import type { LogLevel } from '../wire/index.js';

export interface TaskLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface LogBounds {
  /** Lines stored per attempt (default 1,000). */
  maxLines: number;
  /** Bytes of message and fields stored per attempt (default 256 KiB). */
  maxBytes: number;
}

export const DEFAULT_LOG_BOUNDS: LogBounds = { maxLines: 1000, maxBytes: 256 * 1024 };

/** The longest message kept whole: a longer one is cut (and says so). */
const MAX_MESSAGE = 8 * 1024;

export class AttemptLog implements TaskLogger {
  private pending: NewLogLine[] = [];
  private kept = 0;
  private keptBytes = 0;
  private dropped = 0;
  private droppedBytes = 0;
  private closed = false;
  readonly debug = (message: string, fields?: Record<string, unknown>) => this.write('debug', message, fields);
  readonly info = (message: string, fields?: Record<string, unknown>) => this.write('info', message, fields);
  readonly warn = (message: string, fields?: Record<string, unknown>) => this.write('warn', message, fields);
  readonly error = (message: string, fields?: Record<string, unknown>) => this.write('error', message, fields);

  constructor(
    private readonly task: { workflow_id: string; name: string; attempt: number; worker?: string },
    private readonly bounds: LogBounds,
    /** Told of each kept line (the writer stores them in batches). */
    private readonly onLine: (log: AttemptLog) => void,
    private readonly now: () => Date = () => new Date(),
    /** The attempt's sensitive values in clear: a line never stores one. */
    private readonly secrets = Secrets.none,
  ) {}

  /** Lines waiting to be stored. */
  get waiting(): number {
    return this.pending.length;
  }

  private write(level: LogLevel, message: unknown, fields: unknown): void {
    // after the attempt ended (a handler that outlived it), lines go nowhere
    if (this.closed) return;
    let line: ReturnType<typeof prepare>;
    try {
      line = prepare(message, fields, this.secrets);
    } catch {
      line = { message: braidText('(a log line that could not be read)'), fields: null, bytes: 40 };
    }
    if (this.kept + 1 > this.bounds.maxLines || this.keptBytes + line.bytes > this.bounds.maxBytes) {
      this.dropped++;
      this.droppedBytes += line.bytes;
      return;
    }
    const { workflow_id, name, attempt, worker } = this.task;
    // an attempt that logs says where it ran first (one that never logs costs nothing: its timeline says it)
    if (this.kept === 0 && worker !== undefined)
      this.pending.push({
        workflow_id,
        task: name,
        attempt,
        at: this.now(),
        level: 'info',
        source: 'braid',
        message: braidText(`attempt ${attempt} started on worker ${worker}`),
        fields: braidJson({ worker }),
      });
    this.kept++;
    this.keptBytes += line.bytes;
    this.pending.push({ workflow_id, task: name, attempt, at: this.now(), level, source: 'handler', message: line.message, fields: line.fields });
    this.onLine(this);
  }

  /** The lines to store now; `final` closes the log and adds, when lines were dropped, a line that says so. */
  take(final = false): NewLogLine[] {
    const lines = this.pending;
    this.pending = [];
    if (final && !this.closed) {
      this.closed = true;
      if (this.dropped > 0) {
        const { workflow_id, name, attempt } = this.task;
        lines.push({
          workflow_id,
          task: name,
          attempt,
          at: this.now(),
          level: 'warn',
          source: 'braid',
          message: braidText(
            `${this.dropped} more line(s) (${this.droppedBytes} bytes) were dropped: an attempt keeps ` +
              `${this.bounds.maxLines} lines and ${this.bounds.maxBytes} bytes`,
          ),
          fields: braidJson({ dropped_lines: this.dropped, dropped_bytes: this.droppedBytes }),
        });
      }
    }
    return lines;
  }

  /** Lines taken but not stored (the database did not answer) go back, first. */
  giveBack(lines: NewLogLine[]): void {
    this.pending = [...lines, ...this.pending];
  }
}

/** A message as text, and fields as a JSON object Postgres can store (scrubbed of the attempt's secrets, every string made storable). */
function prepare(
  message: unknown,
  fields: unknown,
  secrets: Secrets,
): { message: Scrubbed<string>; fields: Scrubbed<Record<string, unknown>> | null; bytes: number } {
  let raw = typeof message === 'string' ? message : String(message);
  if (raw.length > MAX_MESSAGE) raw = `${raw.slice(0, MAX_MESSAGE)}... (${raw.length - MAX_MESSAGE} more characters)`;
  const text = scrubText(raw, secrets);
  let json: Scrubbed<Record<string, unknown>> | null = null;
  let bytes = Buffer.byteLength(text);
  if (fields !== undefined && fields !== null) {
    const serialized = JSON.stringify(fields, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    const parsed: unknown = serialized === undefined ? null : JSON.parse(serialized);
    json = scrubJson(
      parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (storableJson(parsed) as Record<string, unknown>)
        : { value: storableJson(parsed) },
      secrets,
    );
    bytes += Buffer.byteLength(JSON.stringify(json));
  }
  return { message: text, fields: json, bytes };
}

function storableJson(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (Array.isArray(v)) return v.map(storableJson);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [storableText(k), storableJson(x)]));
  return v;
}

/**
 * Stores the lines of a worker's attempts: in batches, a second after a line is written (so a crash loses at
 * most that second), and at each attempt's end before the end is recorded (in the handler's transaction when
 * it opened one). A database that does not answer keeps the lines for the next try; said once.
 */
export class LogWriter {
  private readonly dirty = new Set<AttemptLog>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private failing = false;

  constructor(
    private readonly o: {
      db: Queryable;
      s: string;
      log: Logger;
      bounds?: Partial<LogBounds>;
      /** How long a line may wait to be stored while its attempt runs (default 1 s). */
      flushMs?: number;
    },
  ) {}

  /** A new attempt's log. */
  open(task: { workflow_id: string; name: string; attempt: number; worker?: string }, secrets?: Secrets): AttemptLog {
    const b = this.o.bounds;
    const bounds = { maxLines: b?.maxLines ?? DEFAULT_LOG_BOUNDS.maxLines, maxBytes: b?.maxBytes ?? DEFAULT_LOG_BOUNDS.maxBytes };
    return new AttemptLog(task, bounds, (log) => this.noticed(log), undefined, secrets);
  }

  private noticed(log: AttemptLog): void {
    this.dirty.add(log);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), this.o.flushMs ?? 1000);
      this.timer.unref();
    }
  }

  /** Stores every line waiting (one statement); a failure keeps them for the next flush. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.flushing) return this.flushing.then(() => this.flush());
    const logs = [...this.dirty];
    this.dirty.clear();
    const taken = logs.map((log) => ({ log, lines: log.take() }));
    const lines = taken.flatMap((t) => t.lines);
    if (lines.length === 0) return Promise.resolve();
    this.flushing = insertLogLines(this.o.db, this.o.s, lines)
      .then(
        () => {
          if (this.failing) this.o.log.info('task log lines are stored again');
          this.failing = false;
        },
        (error: unknown) => {
          for (const t of taken) {
            t.log.giveBack(t.lines);
            this.noticed(t.log);
          }
          if (!this.failing) this.o.log.warn(`task log lines could not be stored (kept to try again): ${errorMessage(error)}`);
          this.failing = true;
        },
      )
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /**
   * An attempt's last lines, stored through `q` before its end is recorded: the handler's own transaction
   * when it opened one (they commit with the completion), else a statement of their own after the lines
   * already on their way.
   */
  async end(log: AttemptLog, q?: Queryable): Promise<void> {
    if (!q && this.flushing) await this.flushing;
    this.dirty.delete(log);
    const lines = log.take(true);
    if (lines.length === 0) return;
    if (q) return insertLogLines(q, this.o.s, lines);
    try {
      await insertLogLines(this.o.db, this.o.s, lines);
    } catch (error) {
      log.giveBack(lines);
      this.noticed(log);
      if (!this.failing) this.o.log.warn(`task log lines could not be stored (kept to try again): ${errorMessage(error)}`);
      this.failing = true;
    }
  }

  /** One line of braid's own about an attempt, stored now (a failure to store it is said, never thrown). */
  async braidLine(task: { workflow_id: string; name: string; attempt: number }, level: LogLevel, message: string): Promise<void> {
    const line: NewLogLine = {
      workflow_id: task.workflow_id,
      task: task.name,
      attempt: task.attempt,
      at: new Date(),
      level,
      source: 'braid',
      message: braidText(message),
      fields: null,
    };
    await insertLogLines(this.o.db, this.o.s, [line]).catch((error: unknown) => this.o.log.warn(`a task log line could not be stored: ${errorMessage(error)}`));
  }

  /** At shutdown: what is waiting, once. */
  async stop(): Promise<void> {
    if (this.dirty.size > 0 || this.flushing) await this.flush();
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
