import { writeSync } from 'node:fs';
import { workerData } from 'node:worker_threads';
import type pg from 'pg';
import type { LivenessData } from './liveness.js';

/**
 * The liveness thread's body: while the worker's main thread is blocked (a handler's synchronous work), it
 * records the worker's heartbeat over a connection of its own, so a busy worker is not taken for dead and its
 * attempts are not run a second time elsewhere. A main thread blocked past the stall limit is taken for hung:
 * the thread says so once and stops, and the others rescue the attempts.
 */
const data = workerData as LivenessData;
const clocks = new BigInt64Array(data.shared);
let client: pg.Client | undefined;
let gaveUp = false;
/**
 * The driver and the statement, loaded the first time the main thread is found blocked: most workers never
 * block, and loading the driver at start cost the thread twice its own start (~45 of ~90 ms of CPU a worker).
 */
let beating: Promise<{ Client: typeof pg.Client; statement: string }> | undefined;
const driver = () =>
  (beating ??= Promise.all([import('pg'), import('../sql/workers.js')])
    .then(([driver, sql]) => ({
      Client: driver.default.Client,
      statement: sql.livenessBeat(data.s),
    }))
    .catch((error: unknown) => {
      beating = undefined;
      throw error;
    }));

async function beat(): Promise<void> {
  const blocked = Date.now() - Number(Atomics.load(clocks, 0));
  if (blocked < data.intervalMs) {
    gaveUp = false;
    return;
  }
  if (blocked > data.stallLimitMs) {
    if (!gaveUp) {
      gaveUp = true;
      // the main thread cannot print now: written straight to stderr
      writeSync(
        2,
        `braid worker ${data.workerId}: the event loop has been blocked for ${(blocked / 1000).toFixed(1)} s, ` +
          `past the stall limit (${(data.stallLimitMs / 1000).toFixed(1)} s): no longer keeping this worker alive, its attempts will run again elsewhere\n`,
      );
    }
    return;
  }
  try {
    const { Client, statement } = await driver();
    if (!client) {
      const c = new Client(data.settings);
      c.on('error', () => undefined);
      client = c;
      await c.connect();
    }
    await client.query({ text: statement, values: [data.workerId], query_timeout: data.deadlineMs } as pg.QueryConfig);
    Atomics.store(clocks, 1, BigInt(Date.now()));
  } catch {
    // the main thread notices an unreachable database itself; this connection is replaced next time
    const c = client;
    client = undefined;
    c?.end().catch(() => undefined);
  }
}

async function loop(): Promise<void> {
  for (;;) {
    await beat();
    await new Promise((resolve) => setTimeout(resolve, data.intervalMs / 2));
  }
}

void loop();
