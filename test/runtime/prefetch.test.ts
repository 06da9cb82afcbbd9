import { describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { patient } from '../helpers/patience.js';
import { backend, drivenRuntime, settle, testDatabase, testRuntime, uniqueSchema } from '../helpers/runtime.js';

const six = `name: six\ntasks:\n${['a', 'b', 'c', 'd', 'e', 'f'].map((n) => `  ${n}: { kind: hold }\n`).join('')}`;

/** A handler that blocks until released, counting its runs per task; `started(n)` resolves once n have started. */
function holding() {
  const runs: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const waiting: { n: number; resolve: () => void }[] = [];
  const handlers: Handlers = {
    hold: async (_args, ctx) => {
      runs.push(ctx.taskName);
      for (const w of waiting.filter((x) => runs.length >= x.n)) w.resolve();
      await Promise.race([gate, new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))]);
      return { ran: ctx.taskName };
    },
  };
  const started = (n: number) =>
    new Promise<void>((resolve, reject) => {
      if (runs.length >= n) return resolve();
      waiting.push({ n, resolve });
      setTimeout(() => reject(new Error(`${runs.length} of ${n} handlers started`)), patient(10_000)).unref();
    });
  return { runs, handlers, open: () => open(), started };
}

describe(`prefetch: tasks claimed ahead of free slots (${backend})`, () => {
  it('claims beyond the concurrency, runs no more than the concurrency, and completes everything', async () => {
    const h = holding();
    const rt = await drivenRuntime({ handlers: h.handlers, queues: { default: 2 }, prefetch: 4, definitions: { six } });
    await rt.startWorker();
    const id = await rt.start('six');
    // all six claimed in one claim; the first two handlers start once it is back (after it committed)
    await h.started(2);
    expect((await rt.workflow(id).tasks()).filter((t) => t.state === 'running')).toHaveLength(6);
    expect(h.runs).toHaveLength(2);
    h.open();
    await settle(rt);
    expect((await rt.workflow(id).load()).state).toBe('completed');
    expect(h.runs.sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('a graceful stop gives prefetched tasks back unspent; another worker runs them', async () => {
    const schema = uniqueSchema();
    const first = holding();
    const a = await drivenRuntime({ schema, handlers: first.handlers, queues: { default: 1 }, prefetch: 5, definitions: { six } });
    await a.startWorker();
    const id = await a.start('six');
    // one claim took all six: the first handler starts once it is back
    await first.started(1);
    expect((await a.workflow(id).tasks()).filter((t) => t.state === 'running')).toHaveLength(6);
    await a.stop(50);
    const after = await a.workflow(id).tasks();
    // the one running handler was aborted (released with a note); the five waiting were never started
    const started = first.runs[0];
    for (const t of after) {
      expect(t.state).toBe('available');
      expect(t.attempt).toBe(0);
      expect(t.worker_id).toBeNull();
      expect(t.errors.map((e) => e.kind)).toEqual(t.name === started ? ['shutdown'] : []);
    }
    const second = holding();
    second.open();
    const b = await drivenRuntime({ schema, database: await testDatabase(), handlers: second.handlers, queues: { default: 3 } });
    await b.startWorker();
    await settle(b);
    expect((await b.workflow(id).load()).state).toBe('completed');
    expect(second.runs.sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    for (const t of await b.workflow(id).tasks()) expect(t.attempt).toBe(1);
  });

  it('cancelling a workflow cancels its prefetched tasks without running them', async () => {
    const h = holding();
    const rt = await drivenRuntime({ handlers: h.handlers, queues: { default: 1 }, prefetch: 5, definitions: { six } });
    await rt.startWorker();
    const id = await rt.start('six');
    await h.started(1);
    expect((await rt.workflow(id).tasks()).filter((t) => t.state === 'running')).toHaveLength(6);
    await rt.workflow(id).cancel();
    await settle(rt);
    const w = await rt.workflow(id).load();
    expect(w.state).toBe('cancelled');
    expect(h.runs).toHaveLength(1);
    const tasks = await rt.workflow(id).tasks();
    expect(tasks.map((t) => t.state)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled', 'cancelled', 'cancelled']);
  });

  it('a handler aborted by shutdown while its workflow is being cancelled ends cancelled, not available again', async () => {
    const h = holding();
    const rt = await testRuntime({ handlers: h.handlers, queues: { default: 1 }, definitions: { one: 'name: one\ntasks:\n  t: { kind: hold }\n' } });
    await rt.startWorker();
    const id = await rt.start('one');
    await h.started(1);
    // cancel from another runtime that runs no worker, so the handler sees no abort before the shutdown
    const other = await testRuntime({ schema: rt.schema, database: await testDatabase() });
    await rt.db.query(`UPDATE "${rt.schema}".tasks SET cancel_requested = true WHERE workflow_id = $1`, [id]);
    await rt.db.query(`UPDATE "${rt.schema}".workflows SET cancel_requested = true WHERE id = $1`, [id]);
    await rt.stop(0);
    const t = await other.workflow(id).task('t');
    expect(t.state).toBe('cancelled');
    expect((await other.workflow(id).load()).state).toBe('cancelled');
  });
});
