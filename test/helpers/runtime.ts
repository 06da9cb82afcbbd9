import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { createPostgres } from '../../src/runtime/db/postgres.js';
import type { Database } from '../../src/runtime/db/types.js';
import { migratedDatabase } from '../../src/runtime/embedded-image.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';

/** Which database the runtime suites run on: CI runs them once per backend. */
export const backend: 'postgres' | 'pglite' =
  process.env.BRAID_TEST_BACKEND === 'postgres' || (process.env.BRAID_TEST_BACKEND !== 'pglite' && process.env.DATABASE_URL) ? 'postgres' : 'pglite';

export const postgresUrl = process.env.DATABASE_URL ?? 'postgres://braid:braid@127.0.0.1:5432/braid_test';

/** Test files run side by side against one server: idle connections are given back soon, not after pg's 10 s. */
const IDLE_MS = 1000;

let shared: Promise<Database> | undefined;
const runtimes: Runtime[] = [];
const schemas: string[] = [];

/**
 * One database per test file; each test gets a schema of its own, so tests never see each other's rows. An
 * embedded one starts from the migrated image braid test keeps (a fraction of a second, not an initdb).
 */
export function testDatabase(): Promise<Database> {
  shared ??= backend === 'postgres' ? Promise.resolve(createPostgres({ connectionString: postgresUrl, max: 10, idleTimeoutMs: IDLE_MS })) : migratedDatabase();
  return shared;
}

export function newDatabase(): Database {
  return createPostgres({ connectionString: postgresUrl, max: 10, idleTimeoutMs: IDLE_MS });
}

afterAll(async () => {
  for (const rt of runtimes.splice(0)) await rt.stop(0).catch(() => undefined);
  if (shared) {
    const db = await shared;
    if (backend === 'postgres') for (const s of schemas.splice(0)) await db.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`).catch(() => undefined);
    await db.close();
    shared = undefined;
  }
});

export function uniqueSchema(): string {
  const s = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  schemas.push(s);
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

/** A migrated runtime in a fresh schema, with definitions registered; stopped after the file. */
export async function testRuntime(options: TestRuntimeOptions = {}): Promise<Runtime> {
  const rt = createRuntime({
    pollIntervalMs: 50,
    heartbeatIntervalMs: 200,
    leaderLeaseMs: 1000,
    schema: options.schema ?? uniqueSchema(),
    ...options,
    database: options.database ?? (await testDatabase()),
  });
  runtimes.push(rt);
  await rt.migrate();
  if (options.definitions) {
    const result = await rt.registerDefinitions(definitionsDir(options.definitions));
    if (result.validation.errors > 0) throw new Error(result.validation.diagnostics.map((d) => `${d.file}:${d.line}: ${d.message}`).join('\n'));
  }
  return rt;
}

/** Starts a workflow and waits for it to finalize. */
export async function run(rt: Runtime, name: string, inputs: unknown = {}, timeoutMs = 30_000) {
  const id = await rt.start(name, inputs);
  const workflow = await rt.workflow(id).waitUntilFinal({ timeoutMs, pollMs: 50 });
  const tasks = Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t]));
  return { id, workflow, tasks };
}

export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 20_000, stepMs = 25): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
