import { describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Logger } from '../../src/runtime/telemetry/log.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { Arrivals } from '../helpers/arrivals.js';
import { backend, run, testRuntime, until } from '../helpers/runtime.js';

/** One task, two attempts with no wait between them: a hostile handler's workflow must still end. */
const once = (kind: string) => `name: ${kind}\ntasks:\n  t: { kind: ${kind}, max_attempts: 2, retry: { backoff: constant, initial: 1ms, jitter: false } }\n`;

function recordingLogger(): Logger & { lines: string[]; arrivals: Arrivals<string> } {
  const arrivals = new Arrivals<string>();
  return {
    lines: arrivals.items,
    arrivals,
    info: (m) => arrivals.push(`info ${m}`),
    warn: (m) => arrivals.push(`warn ${m}`),
    taskDone: (t, outcome) => arrivals.push(`${t.name}#${t.attempt} ${outcome}`),
  };
}

/** Makes the database refuse every completion of a task's first attempt, with this SQLSTATE and message. */
async function refuseFirstCompletion(rt: Runtime, sqlstate: string, message: string): Promise<void> {
  await rt.db.exec(`
    CREATE FUNCTION "${rt.schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION '${message}' USING ERRCODE = '${sqlstate}'; END $$;
    CREATE TRIGGER refuse BEFORE UPDATE ON "${rt.schema}".tasks FOR EACH ROW
      WHEN (NEW.state = 'completed' AND NEW.attempt = 1) EXECUTE FUNCTION "${rt.schema}".refuse();`);
}

describe(`hostile handlers never hold a task or crash the worker (${backend})`, () => {
  it('an output holding U+0000 or a lone surrogate is an attempt error naming where, and the workflow ends', async () => {
    const handlers: Handlers = {
      nul: async () => ({ user: { name: 'a\u0000b' } }),
      surrogate: async () => ['ok', '\ud800'],
      key: async () => ({ 'k\u0000': 1 }),
    };
    const rt = await testRuntime({ handlers, definitions: { nul: once('nul'), surrogate: once('surrogate'), key: once('key') } });
    await rt.startWorker();
    const nul = await run(rt, 'nul');
    expect(nul.workflow.state).toBe('failed');
    expect(nul.tasks.t).toMatchObject({ state: 'discarded', attempt: 2 });
    expect(nul.tasks.t.errors[0]).toMatchObject({ kind: 'output', message: "the handler's output holds U+0000 at /user/name, which Postgres cannot store" });
    const surrogate = await run(rt, 'surrogate');
    expect(surrogate.tasks.t.errors[0].message).toBe("the handler's output holds an unpaired surrogate U+D800 at /1, which Postgres cannot store");
    const key = await run(rt, 'key');
    expect(key.tasks.t.errors[0].message).toBe(`the handler's output holds U+0000 in the key "k\\u0000", which Postgres cannot store`);
  });

  it('an error message, name or stack holding U+0000 or a lone surrogate is stored escaped', async () => {
    const handlers: Handlers = {
      bad: async () => {
        const e = new Error('nul \u0000 and \udc00 here');
        e.name = 'Odd\u0000Error';
        e.stack = 'Odd: \u0000\n    at somewhere \ud800';
        throw e;
      },
      text: async () => Promise.reject('plain \u0000 string'),
    };
    const rt = await testRuntime({ handlers, definitions: { bad: once('bad'), text: once('text') } });
    await rt.startWorker();
    const bad = await run(rt, 'bad');
    expect(bad.workflow.state).toBe('failed');
    expect(bad.tasks.t.errors[0]).toMatchObject({
      message: 'nul \\u0000 and \\udc00 here',
      name: 'Odd\\u0000Error',
      stack: 'Odd: \\u0000\n    at somewhere \\ud800',
    });
    const text = await run(rt, 'text');
    expect(text.tasks.t.errors[0].message).toBe('non-Error thrown: plain \\u0000 string');
  });

  it('ctx.snooze(NaN), Infinity, negative, absurd or non-number durations are attempt errors', async () => {
    const bad: unknown[] = [NaN, Infinity, -1, 1e15, '5', undefined];
    const handlers: Handlers = Object.fromEntries(bad.map((ms, i) => [`s${i}`, async (_a, ctx) => ctx.snooze(ms as number)]));
    const definitions = Object.fromEntries(bad.map((_, i) => [`s${i}`, once(`s${i}`)]));
    const rt = await testRuntime({ handlers, definitions });
    await rt.startWorker();
    const shown = ['NaN', 'Infinity', '-1', '1000000000000000', '"5"', 'undefined'];
    for (let i = 0; i < bad.length; i++) {
      const { workflow, tasks } = await run(rt, `s${i}`);
      expect(workflow.state).toBe('failed');
      expect(tasks.t.errors[0]).toMatchObject({
        name: 'RangeError',
        message: `ctx.snooze(ms) takes a number of milliseconds from 0 to 31536000000 (a year), not ${shown[i]}`,
      });
    }
  });

  it('thrown values whose reading throws (proxies, throwing getters, throwing toString) fail the attempt with a placeholder', async () => {
    const trap = () =>
      new Proxy(
        {},
        {
          get() {
            throw new Error('trap');
          },
          getPrototypeOf() {
            throw new Error('trap');
          },
        },
      );
    const handlers: Handlers = {
      proxy: async () => {
        throw trap();
      },
      getter: async () => {
        const e = new Error('x');
        // (stack first: redefining it makes V8 format the stack, which reads the message)
        Object.defineProperty(e, 'stack', {
          get() {
            throw new Error('getter');
          },
        });
        Object.defineProperty(e, 'message', {
          get() {
            throw new Error('getter');
          },
        });
        throw e;
      },
      tostring: async () => {
        throw {
          toJSON() {
            throw new Error('json');
          },
          toString() {
            throw new Error('string');
          },
        };
      },
      output: async () => trap(),
      sync: () => {
        throw trap();
      },
    };
    const rt = await testRuntime({ handlers, definitions: Object.fromEntries(Object.keys(handlers).map((k) => [k, once(k)])) });
    await rt.startWorker();
    const proxy = await run(rt, 'proxy');
    expect(proxy.workflow.state).toBe('failed');
    expect(proxy.tasks.t.errors[0].message).toBe('the handler threw a value that cannot be described (reading it threw)');
    const getter = await run(rt, 'getter');
    expect(getter.tasks.t.errors[0]).toMatchObject({ message: 'Error', name: 'Error' });
    const tostring = await run(rt, 'tostring');
    expect(tostring.tasks.t.errors[0].message).toBe('non-Error thrown: a object that cannot be shown');
    // returning the proxy: resolving it reads its `then`, which throws, so the handler's promise rejects
    const output = await run(rt, 'output');
    expect(output.tasks.t.errors[0]).toMatchObject({ kind: 'error', message: 'trap' });
    expect((await run(rt, 'sync')).workflow.state).toBe('failed');
  });

  it('a completion the database refuses for good is an attempt error, and the log says completed only once one committed', async () => {
    const log = recordingLogger();
    const rt = await testRuntime({ logger: log, handlers: { ok: async (_a, ctx) => ({ attempt: ctx.attempt }) }, definitions: { refused: once('ok') } });
    // the database refuses to complete attempt 1 (as it would a value it cannot store), and accepts attempt 2
    await refuseFirstCompletion(rt, '22000', 'refused by a test trigger');
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'ok');
    expect(workflow.state).toBe('completed');
    expect(tasks.t).toMatchObject({ attempt: 2, output: { attempt: 2 } });
    expect(tasks.t.errors[0]).toMatchObject({ attempt: 1, kind: 'output', message: 'its output could not be stored: refused by a test trigger' });
    // the worker says completed after the commit it waits for, so a reader can see the commit a moment first
    await log.arrivals.when((lines) => lines.includes('t#2 completed'));
    const done = log.lines.filter((l) => l.startsWith('t#'));
    expect(done).toEqual(['t#1 failed: its output could not be stored: refused by a test trigger', 't#2 completed']);
  });

  it('an attempt whose end keeps failing on a live worker is listed with its heartbeat and rescued by the leader', async () => {
    const log = recordingLogger();
    // the worker heartbeats every 100 ms and is taken for dead after 3 s without one: a busy machine delays a
    // heartbeat by far less, so what the leader rescues is the listed attempt, not a worker it thinks gone
    const rt = await testRuntime({
      logger: log,
      workerDeadAfterMs: 3000,
      heartbeatIntervalMs: 100,
      handlers: { ok: async (_a, ctx) => ({ attempt: ctx.attempt }) },
      definitions: { stuck: once('ok') },
    });
    // attempt 1's completion fails as a lost race would (40001): tried again and again, never committing
    await refuseFirstCompletion(rt, '40001', 'could not serialize (a test trigger)');
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'ok');
    expect(workflow.state).toBe('completed');
    expect(tasks.t).toMatchObject({ attempt: 2, output: { attempt: 2 } });
    expect(tasks.t.errors).toEqual([
      expect.objectContaining({ attempt: 1, kind: 'lost', message: expect.stringMatching(/^worker .* could not record the end of this attempt$/) }),
    ]);
    expect(log.lines.some((l) => l.startsWith('warn recording completions failed, trying again: could not serialize'))).toBe(true);
    // once rescued, the worker's next heartbeats drop the attempt from its list
    const abandoned = async () => (await rt.db.query<{ abandoned: unknown }>(`SELECT abandoned FROM "${rt.schema}".workers`)).rows;
    expect(await abandoned()).toHaveLength(1);
    await until(async () => JSON.stringify(await abandoned()) === JSON.stringify([{ abandoned: null }]));
  });
});
