import { describe, expect, it } from 'vitest';
import { compile, validate } from '../../src/index.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { backend, definitionsDir, drivenRuntime, final, run, scratchTable, settled, testDatabase, testRuntime } from '../helpers/runtime.js';

const sleeper = (ms: number) => async (_args: unknown, ctx: { signal: AbortSignal }) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(() => resolve({ slept: ms }), ms);
    ctx.signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(ctx.signal.reason);
    });
  });

describe(`transactions (${backend})`, () => {
  const def = validate([{ path: 'tx_flow.yaml', content: 'name: tx_flow\ntasks:\n  a: { kind: ok }\n' }]).definitions[0];

  it('an insert inside a caller transaction that rolls back leaves nothing; one that commits runs', async () => {
    const rt = await drivenRuntime({ handlers: { ok: async () => ({ ok: 1 }) } });
    const db = await testDatabase();
    const rolledBack = compile(def, {}, { id: `rb-${Date.now()}` });
    await expect(
      db.transaction(async (tx) => {
        await rt.insert(rolledBack, { tx });
        throw new Error('caller changed its mind');
      }),
    ).rejects.toThrow('caller changed its mind');
    await expect(rt.workflow(rolledBack.workflow.id).load()).rejects.toThrow(/no workflow/);

    await rt.registerDefinitions(definitionsDir({ tx_flow: 'name: tx_flow\ntasks:\n  a: { kind: ok }\n' }));
    const committed = compile(def, {}, { id: `ok-${Date.now()}` });
    await db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await rt.insert(committed, { tx });
    });
    await rt.startWorker();
    expect((await final(rt, committed.workflow.id)).state).toBe('completed');
  });

  it('ctx.transaction: the handler writes commit with the completion, or roll back with a failed attempt', async () => {
    const db = await testDatabase();
    const table = await scratchTable(db, 'workflow_id text, attempt int');
    const handlers: Handlers = {
      effect: async (_args, ctx) => {
        await ctx.transaction((tx) => tx.query(`INSERT INTO ${table} VALUES ($1, $2)`, [ctx.workflowId, ctx.attempt]));
        if (ctx.attempt === 1) throw new Error('failed after writing');
        return { wrote: ctx.attempt };
      },
    };
    const rt = await drivenRuntime({
      handlers,
      definitions: { effects: 'name: effects\ntasks:\n  t: { kind: effect, max_attempts: 3, retry: { backoff: constant, initial: 10ms } }\n' },
    });
    await rt.startWorker();
    const { id, workflow, tasks } = await run(rt, 'effects');
    expect(workflow.state).toBe('completed');
    expect(tasks.t.output).toEqual({ wrote: 2 });
    const { rows } = await db.query<{ attempt: number }>(`SELECT attempt FROM ${table} WHERE workflow_id = $1`, [id]);
    expect(rows.map((r) => r.attempt)).toEqual([2]);
  });

  it('start inside a caller transaction', async () => {
    const rt = await testRuntime({ handlers: { ok: async () => ({}) }, definitions: { tx_start: 'name: tx_start\ntasks:\n  a: { kind: ok }\n' } });
    const db = await testDatabase();
    const id = await db.transaction((tx) => rt.start('tx_start', {}, { tx }));
    expect((await rt.workflow(id).load()).state).toBe('running');
  });
});

describe(`cancel and shutdown (${backend})`, () => {
  it('cancel while tasks run: pending tasks are cancelled, running handlers get an abort, the workflow ends cancelled', async () => {
    const clock = new VirtualClock(new Date());
    let aborted = 0;
    let bothAborted!: () => void;
    const bothDone = new Promise<void>((r) => (bothAborted = r));
    const handlers: Handlers = {
      long: async (_a, ctx) => {
        try {
          return await clock.sleep(10 * 60_000, ctx.signal);
        } catch (e) {
          if (++aborted === 2) bothAborted();
          throw e;
        }
      },
      ok: async () => ({}),
    };
    const rt = await drivenRuntime({
      handlers,
      virtualClock: clock,
      definitions: { cancellable: 'name: cancellable\ntasks:\n  a: { kind: long }\n  b: { kind: long }\n  c: { kind: ok, deps: [a] }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('cancellable');
    await settled(rt, () => clock.sleeping === 2);
    const result = await rt.workflow(id).cancel();
    expect(result.cancelled).toEqual(['c']);
    expect(result.stopping.sort()).toEqual(['a', 'b']);
    // the abort reaches the handlers by notification: on Postgres, after the cancel's commit, in its own time
    // (moving the clock before it arrives would end their sleeps instead)
    await bothDone;
    expect((await final(rt, id)).state).toBe('cancelled');
    expect(aborted).toBe(2);
    const states = Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t.state]));
    expect(states).toEqual({ a: 'cancelled', b: 'cancelled', c: 'cancelled' });
    expect(await rt.workflow(id).cancel()).toEqual({ cancelled: [], stopping: [] });
  });

  it('a running handler that finishes after cancel still completes its task', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      // it takes a minute and does not listen for the abort
      handlers: { stubborn: async () => clock.sleep(60_000).then(() => ({ done: true })) },
      virtualClock: clock,
      definitions: { finish_anyway: 'name: finish_anyway\ntasks:\n  a: { kind: stubborn }\n  b: { kind: stubborn, deps: [a] }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('finish_anyway');
    await settled(rt, async () => (await rt.workflow(id).task('a')).state === 'running');
    await rt.workflow(id).cancel();
    expect((await final(rt, id)).state).toBe('cancelled');
    expect(await rt.workflow(id).task('a')).toMatchObject({ state: 'completed', output: { done: true } });
    expect((await rt.workflow(id).task('b')).state).toBe('cancelled');
  });

  it('graceful shutdown lets running handlers finish before the deadline, releases the rest for later', async () => {
    // quick runs until the stop has begun, then finishes well inside the deadline; slow never does. The
    // stop begins once both handlers run: a task the database shows running may still be on its way to the
    // worker (a prefetch in flight), and a stop releases such a task unstarted, as it should.
    let release: () => void = () => undefined;
    const released = new Promise<void>((r) => (release = r));
    const began: Record<string, () => void> = {};
    const started = ['quick', 'slow'].map((k) => new Promise<void>((r) => (began[k] = r)));
    const slow = sleeper(60_000);
    const rt = await testRuntime({
      handlers: {
        quick: async () => (began.quick(), await released, { quick: true }),
        slow: async (args: unknown, ctx: { signal: AbortSignal }) => (began.slow(), slow(args, ctx)),
      },
      definitions: { shutdown: 'name: shutdown\ntasks:\n  q: { kind: quick }\n  s: { kind: slow, max_attempts: 1 }\n' },
    });
    await rt.startWorker();
    const id = await rt.start('shutdown');
    await Promise.all(started);
    const stopping = rt.stop(3000);
    release();
    await stopping;
    const tasks = Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t]));
    expect(tasks.q.state).toBe('completed');
    expect(tasks.s).toMatchObject({ state: 'available', attempt: 0 });
    expect(tasks.s.errors[0]).toMatchObject({ kind: 'shutdown' });

    // a worker started later runs what the stop released
    const again = await drivenRuntime({ schema: rt.schema, handlers: { quick: sleeper(1), slow: sleeper(1) } });
    await again.startWorker();
    expect((await final(again, id)).state).toBe('completed');
  });
});
