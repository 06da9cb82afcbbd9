/**
 * A test session: one in-process embedded database, migrated once, with the project's definitions registered;
 * each test then empties the run tables (sql/reset.ts) and runs on the real runtime with a virtual clock.
 * (A fresh PGlite clone per test was measured at about a second each on this machine; emptying the tables
 * gives the same fresh start in milliseconds.)
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NormalizedDefinition } from '../compiler/normalize.js';
import { loadMigrations } from '../runtime/migrate.js';
import { packageRoot } from '../paths.js';
import { createPglite, type PgliteDatabase } from '../runtime/db/pglite.js';
import { createRuntime, type Runtime } from '../runtime/runtime.js';
import { resetRuns } from '../runtime/sql/reset.js';
import type { Handlers } from '../runtime/worker/handlers.js';
import { workflowTree } from './checks.js';
import { mockHandlers } from './mocks.js';
import type { Mock } from './test-file.js';
import { VirtualClock } from './virtual-clock.js';

/** A decade: no worker of the test's own is ever taken for dead while virtual days pass. */
const NEVER_MS = 10 * 365 * 86_400_000;

export interface SessionOptions {
  /** The definitions to register: files and folders. */
  definitions: string | readonly string[];
  /** The project's handlers, for tasks without a mock and mocks with handler: real. */
  handlers?: Handlers;
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
      const rt = createRuntime({ database: db, leader: false });
      const { validation } = await rt.registerDefinitions(options.definitions);
      if (validation.errors > 0) throw new SessionError(validation.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.file}:${d.line}:${d.column}: ${d.message} [${d.rule}]`));
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
  async runtime(workflow: string, mocks: Record<string, Mock>, now: Date, project: Handlers | undefined = this.handlers): Promise<{ rt: Runtime; clock: VirtualClock }> {
    await resetRuns(this.db, this.s);
    const clock = new VirtualClock(now);
    const tree = workflowTree(workflow, this.definitions);
    const names = new Map<string, string>();
    let rt: Runtime;
    const handlers = mockHandlers({
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
    const queues = Object.fromEntries([...new Set([...this.definitions.values()].flatMap((d) => d.tasks.map((t) => t.queue)))].map((q) => [q, 16]));
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
    });
    return { rt, clock };
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/**
 * An embedded database with braid's schema: migrating takes seconds, so the migrated image is kept in the
 * system's temporary folder, named by a digest of the migrations and the engine's version, and loaded from
 * there next time (a second or so). A missing, stale or unreadable image is simply made again.
 */
async function migratedDatabase(): Promise<PgliteDatabase> {
  const migrations = loadMigrations();
  const digest = createHash('sha256').update(`${engineVersion()}\u0000${migrations.map((m) => `${m.name}\u0000${m.sql}`).join('\u0000')}`).digest('hex').slice(0, 16);
  const image = join(tmpdir(), `braid-test-${digest}.tar`);
  if (existsSync(image)) {
    try {
      const db = await createPglite({ loadDataDir: new Blob([readFileSync(image)]) });
      const applied = await createRuntime({ database: db, leader: false }).migrate();
      if (applied.length === 0) return db;
      await db.close();
    } catch {
      // made again below
    }
  }
  const db = await createPglite();
  await createRuntime({ database: db, leader: false }).migrate();
  try {
    const tmp = `${image}.${process.pid}`;
    writeFileSync(tmp, Buffer.from(await (await db.dump()).arrayBuffer()));
    renameSync(tmp, image);
  } catch {
    // a read-only temporary folder only costs the next run its migration
  }
  return db;
}

/** braid's own version and the engine's it depends on: an image is only reused by the release that made it. */
function engineVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string; dependencies?: Record<string, string> };
  return `${pkg.version}\u0000${pkg.dependencies?.['@electric-sql/pglite'] ?? ''}`;
}

/** The definitions under test do not validate: nothing can run. */
export class SessionError extends Error {
  constructor(readonly problems: string[]) {
    super(`the definitions do not validate:\n${problems.join('\n')}`);
    this.name = 'SessionError';
  }
}
