import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { createPostgres } from '../../src/runtime/db/postgres.js';
import type { Database } from '../../src/runtime/db/types.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import { migratedDatabase } from '../../src/runtime/setup/embedded-image.js';
import type { WorkflowRecord } from '../../src/runtime/wire/index.js';
import { Driver } from '../../src/testing/run-test.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { afterEachFile } from './file-end.js';
import { patient } from './patience.js';

/** Which database the runtime suites run on: CI runs them once per backend. */
export const backend: 'postgres' | 'pglite' =
  process.env.BRAID_TEST_BACKEND === 'postgres' || (process.env.BRAID_TEST_BACKEND !== 'pglite' && process.env.DATABASE_URL) ? 'postgres' : 'pglite';

export const postgresUrl = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';

/** Test files run side by side against one server: idle connections are given back soon, not after pg's 10 s. */
const IDLE_MS = 1000;

let shared: Promise<Database> | undefined;
const runtimes: Runtime[] = [];
/** This file's schemas to drop when it ends, and those of its test runtimes, to empty and keep for the next. */
const schemas: string[] = [];
const reusable: string[] = [];
/**
 * Migrated schemas this worker's earlier files used, emptied: its next files' test runtimes take them, since
 * migrating a schema costs a quarter of a second of the database's CPU and emptying one a few milliseconds.
 */
const spare: string[] = [];

/**
 * One database per test worker, for every file it runs; each test gets a schema of its own, so tests never see
 * each other's rows. An embedded one starts from the migrated image braid test keeps (not an initdb).
 */
export function testDatabase(): Promise<Database> {
  shared ??= backend === 'postgres' ? Promise.resolve(createPostgres({ connectionString: postgresUrl, max: 10, idleTimeoutMs: IDLE_MS })) : migratedDatabase();
  return shared;
}

export function newDatabase(): Database {
  return createPostgres({ connectionString: postgresUrl, max: 10, idleTimeoutMs: IDLE_MS });
}

/** What a schema is made of (relations, columns, triggers, functions), as a digest: a test that changed it is seen. */
async function shape(db: Database, schema: string): Promise<string> {
  const { rows } = await db.query<{ digest: string }>(
    `SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '')) AS digest FROM (
       SELECT 'r ' || c.relname || ' ' || c.relkind::text FROM pg_class c WHERE c.relnamespace = $1::regnamespace
       UNION ALL SELECT 'a ' || c.relname || ' ' || a.attname || ' ' || a.atttypid::text FROM pg_attribute a
         JOIN pg_class c ON c.oid = a.attrelid WHERE c.relnamespace = $1::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
       UNION ALL SELECT 't ' || t.tgname || ' ' || t.tgenabled::text FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $1::regnamespace
       UNION ALL SELECT 'f ' || p.proname || ' ' || md5(p.prosrc) FROM pg_proc p WHERE p.pronamespace = $1::regnamespace
     ) s(x)`,
    [`"${schema}"`],
  );
  return rows[0].digest;
}

/** Each reusable schema's shape when it was freshly migrated. */
const shapes = new Map<string, string>();

/** Empties a schema for the next file as on a fresh one (identities restarted too), or says it cannot be: a test changed it. */
async function empty(db: Database, schema: string): Promise<boolean> {
  if (!shapes.has(schema) || (await shape(db, schema)) !== shapes.get(schema)) return false;
  const { rows } = await db.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 AND tablename <> 'migrations'`, [schema]);
  if (rows.length > 0) await db.query(`TRUNCATE ${rows.map((r) => `"${schema}"."${r.name}"`).join(', ')} RESTART IDENTITY CASCADE`);
  return true;
}

// the database stays open for the worker's next file; the file's runtimes stop (after its processes are gone:
// clean-ups run last registered first), its own schemas go, and its test runtimes' are emptied for the next
afterEachFile(async () => {
  for (const rt of runtimes.splice(0)) await rt.stop(0).catch(() => undefined);
  const dropped = schemas.splice(0);
  const emptied = reusable.splice(0);
  if (!shared) return;
  const db = await shared;
  for (const s of emptied) {
    const kept = await empty(db, s).catch(() => false);
    if (kept) spare.push(s);
    else dropped.push(s);
  }
  for (const s of dropped) await db.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`).catch(() => undefined);
  for (const t of scratch.splice(0)) await db.query(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
});

/**
 * This run's mark on what its tests make in the shared database (vitest.config.ts sets it once per run): the
 * run's teardown (test/global-setup.ts) drops whatever of it a worker left, the spare schemas among them.
 */
export const RUN = process.env.BRAID_TEST_RUN ?? Date.now().toString(36);

function schemaName(): string {
  return `t_${RUN}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Tables a test made in the database's public schema, dropped after its file. */
const scratch: string[] = [];

/** A table of the test's own in the database's public schema (`columns` as CREATE TABLE takes them), dropped after the file. */
export async function scratchTable(db: Database, columns: string): Promise<string> {
  const table = `scratch_${RUN}_${Math.random().toString(36).slice(2, 8)}`;
  await db.query(`CREATE TABLE ${table} (${columns})`);
  scratch.push(table);
  return table;
}

/** A schema of the test's own, dropped after the file. */
export function uniqueSchema(): string {
  const s = schemaName();
  schemas.push(s);
  return s;
}

/** A schema for a test runtime: an emptied one of an earlier file when there is one (already migrated), else new. */
function runtimeSchema(): string {
  const s = spare.pop() ?? schemaName();
  reusable.push(s);
  return s;
}

/** Writes definitions into a temporary folder: name -> YAML. */
export function definitionsDir(defs: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'braid-defs-'));
  for (const [name, yaml] of Object.entries(defs)) writeFileSync(join(dir, `${name}.yaml`), yaml);
  return dir;
}

export interface TestRuntimeOptions extends Omit<RuntimeOptions, 'database'> {
  definitions?: Record<string, string>;
  database?: Database;
}

/**
 * Stops a runtime when the test that made it ends (its worker polls, heartbeats and leads until stopped: a
 * file's earlier runtimes would go on doing so beside its later tests); one made outside a test (beforeAll)
 * stops after the file.
 */
function stopAfterTest(rt: Runtime): void {
  try {
    onTestFinished(() => rt.stop(0).catch(() => undefined));
  } catch {
    // not inside a test: the file's clean-up stops it
  }
}

/** A migrated runtime in a fresh schema, with definitions registered; stopped after its test (or file). */
export async function testRuntime(options: TestRuntimeOptions = {}): Promise<Runtime> {
  const rt = createRuntime({
    pollIntervalMs: 50,
    heartbeatIntervalMs: 200,
    leaderLeaseMs: 1000,
    schema: options.schema ?? runtimeSchema(),
    ...options,
    database: options.database ?? (await testDatabase()),
  });
  runtimes.push(rt);
  stopAfterTest(rt);
  await rt.migrate();
  if (reusable.includes(rt.schema) && !shapes.has(rt.schema)) shapes.set(rt.schema, await shape(rt.db, rt.schema));
  if (options.definitions) {
    const result = await rt.registerDefinitions(definitionsDir(options.definitions));
    if (result.validation.errors > 0) throw new Error(result.validation.diagnostics.map((d) => `${d.file}:${d.line}: ${d.message}`).join('\n'));
  }
  return rt;
}

/** Starts a workflow and runs it (driven) or waits for it to finalize. */
export async function run(rt: Runtime, name: string, inputs: unknown = {}, timeoutMs = 30_000) {
  const id = await rt.start(name, inputs);
  const workflow = await final(rt, id, timeoutMs);
  const tasks = Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t]));
  return { id, workflow, tasks };
}

export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 20_000, stepMs = 25): Promise<void> {
  const deadline = Date.now() + patient(timeoutMs);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** A decade: no worker of a driven runtime is taken for dead while virtual days pass. */
const NEVER_MS = 10 * 365 * 86_400_000;
const drivers = new WeakMap<Runtime, { driver: Driver; clock: VirtualClock }>();

/**
 * A runtime driven on braid's virtual clock rather than waited for in real time (src/testing/run-test.ts, what
 * braid test uses): no leader of its own (the driver runs what maintenance is due), no worker taken for dead,
 * and time moves only when the test (its own `virtualClock`, or clockOf(rt)) or the driver moves it. final(),
 * run() and settle() then drive it. For
 * logic; real time stays for what only real time shows (LISTEN, faults, several processes, latency).
 */
export async function drivenRuntime(options: TestRuntimeOptions & { virtualClock?: VirtualClock } = {}): Promise<Runtime> {
  const { virtualClock, ...rest } = options;
  const clock = virtualClock ?? new VirtualClock(new Date());
  return drive(await testRuntime({ ...DRIVEN, ...rest, clock: clock.now }), clock);
}

/**
 * What a runtime made elsewhere (createRuntime) needs to be driven: no leader, no worker taken for dead, and
 * the driver's clock. Its worker fetches when the driver (or a notification) says so, not on a poll of its own,
 * and heartbeats once a second.
 */
export const DRIVEN = { leader: false, workerDeadAfterMs: NEVER_MS, pollIntervalMs: 3_600_000, heartbeatIntervalMs: 1000 } as const;

/** Drives a runtime made with DRIVEN and `clock: clock.now`, as drivenRuntime's are. */
export function drive(rt: Runtime, clock: VirtualClock): Runtime {
  drivers.set(rt, { driver: new Driver(rt, clock, { db: rt.db, s: `"${rt.schema}"` }), clock });
  return rt;
}

/** The virtual clock of a driven runtime. */
export function clockOf(rt: Runtime): VirtualClock {
  const d = drivers.get(rt);
  if (!d) throw new Error('not a driven runtime (drivenRuntime)');
  return d.clock;
}

/** Runs everything a driven runtime can run now (handlers, completions, due maintenance) until all is quiet. */
export async function settle(rt: Runtime): Promise<void> {
  const d = drivers.get(rt);
  if (!d) throw new Error('not a driven runtime (drivenRuntime)');
  await d.driver.settle();
}

/** Moves a driven runtime's clock `ms` on, stopping at everything due on the way. */
export async function advance(rt: Runtime, ms: number): Promise<void> {
  const d = drivers.get(rt);
  if (!d) throw new Error('not a driven runtime (drivenRuntime)');
  await d.driver.advanceTo(d.clock.now().getTime() + ms);
}

/** Settles a driven runtime, then checks what the test expected of it then (the driven twin of a real-time poll). */
export async function settled(rt: Runtime, check: () => Promise<boolean> | boolean): Promise<void> {
  await settle(rt);
  if (!(await check())) throw new Error('not so once the run settled');
}

/**
 * The workflow once it is final: a driven runtime runs it there, the clock jumping to whatever comes next (it
 * comes back still running when nothing more is due, a wait for a signal say); another is waited for.
 */
export async function final(rt: Runtime, id: string, timeoutMs = 20_000): Promise<WorkflowRecord> {
  const d = drivers.get(rt);
  if (!d) return rt.workflow(id).waitUntilFinal({ timeoutMs: patient(timeoutMs), pollMs: 50 });
  await d.driver.runToEnd(id, Number.POSITIVE_INFINITY);
  return rt.workflow(id).load();
}
