import { randomBytes } from 'node:crypto';
/**
 * A test session: one in-process embedded database, migrated once, with the project's definitions registered;
 * each test then empties the run tables (sql/reset.ts) and runs on the real runtime with a virtual clock.
 * (A fresh PGlite clone per test was measured at about a second each on this machine; emptying the tables
 * gives the same fresh start in milliseconds.)
 */
import type { NormalizedDefinition } from '../compiler/normalize.js';
import type { EventsConfig, KindsConfig } from '../compiler/validate.js';
import type { PgliteDatabase } from '../runtime/db/pglite.js';
import { createRuntime, migratedDatabase, resetRuns } from '../runtime/index.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Handlers } from '../runtime/worker/handlers.js';
import { workflowTree } from './checks.js';
import { mockHandlers } from './mocks.js';
import type { Mock } from './test-file.js';
import { VirtualClock } from './virtual-clock.js';

/** The key a test session's callback links are signed with (tests only: nothing outside the session reads them). */
const SESSION_SECRET = `test:${randomBytes(32).toString('base64url')}`;
/** The data key its sensitive values are sealed with, unless BRAID_KEYS gives the project's (the database is the test's own). */
const SESSION_KEYS = process.env.BRAID_KEYS || `test:${randomBytes(32).toString('base64')}`;
/** A decade: no worker of the test's own is ever taken for dead while virtual days pass. */
const NEVER_MS = 10 * 365 * 86_400_000;

export interface SessionOptions {
  /** The definitions to register: files and folders. */
  definitions: string | readonly string[];
  /** The project's handlers, for tasks without a mock and mocks with handler: real. */
  handlers?: Handlers;
  /** The project config's `kinds`: a task without its own `returns` takes its kind's. */
  kinds?: KindsConfig;
  /** The project config's `events`: the events triggers may name. */
  events?: EventsConfig;
}

export class TestSession {
  /** The schema the session's runtimes use (the default one), quoted for statements. */
  readonly s = '"braid"';

  private constructor(
    readonly db: PgliteDatabase,
    readonly definitions: ReadonlyMap<string, NormalizedDefinition>,
    readonly handlers: Handlers | undefined,
  ) {}

  static async open(options: SessionOptions): Promise<TestSession> {
    const db = await migratedDatabase();
    try {
      const rt = createRuntime({ database: db, leader: false, keys: SESSION_KEYS });
      const { validation } = await rt.registerDefinitions(options.definitions, { kinds: options.kinds, events: options.events });
      if (validation.errors > 0)
        throw new SessionError(
          validation.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.file}:${d.line}:${d.column}: ${d.message} [${d.rule}]`),
        );
      const defs = validation.definitions;
      return new TestSession(db, new Map(defs.map((d) => [d.name, d.normalized])), options.handlers);
    } catch (error) {
      await db.close();
      throw error;
    }
  }

  /**
   * A runtime for one test, on emptied run tables: the virtual clock, mocks as handlers, no leader of its own
   * (the runner runs maintenance when it chooses), nothing ever taken for dead or deleted by retention.
   */
  async runtime(
    workflow: string,
    mocks: Record<string, Mock>,
    now: Date,
    project: Handlers | undefined = this.handlers,
    slots: Record<string, number> = {},
  ): Promise<{ rt: Runtime; clock: VirtualClock; started: string[] }> {
    await resetRuns(this.db, this.s);
    const clock = new VirtualClock(now);
    const tree = workflowTree(workflow, this.definitions);
    const names = new Map<string, string>();
    let rt: Runtime;
    const started: string[] = [];
    const handlers = mockHandlers({
      started,
      workflow,
      tree,
      mocks,
      project,
      clock,
      nameOf: async (id) => {
        let name = names.get(id);
        if (name === undefined) names.set(id, (name = (await rt.workflow(id).load()).name));
        return name;
      },
    });
    const queues = Object.fromEntries([...new Set([...this.definitions.values()].flatMap((d) => d.tasks.map((t) => t.queue)))].map((q) => [q, slots[q] ?? 16]));
    rt = createRuntime({
      database: this.db,
      clock: clock.now,
      handlers,
      queues,
      leader: false,
      pollIntervalMs: 20,
      heartbeatIntervalMs: 60_000,
      workerDeadAfterMs: NEVER_MS,
      retention: { closedMs: null, cancelledMs: null },
      // callback steps answer links the test's run made: a key of the session's own signs them
      secret: SESSION_SECRET,
      keys: SESSION_KEYS,
    });
    return { rt, clock, started };
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/** The definitions under test do not validate: nothing can run. */
export class SessionError extends Error {
  constructor(readonly problems: string[]) {
    super(`the definitions do not validate:\n${problems.join('\n')}`);
    this.name = 'SessionError';
  }
}
