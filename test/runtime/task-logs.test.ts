import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import { renderLine } from '../../src/cli/commands/logs.js';
import { renderStatus } from '../../src/cli/commands/status.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { backend, drivenRuntime, final } from '../helpers/runtime.js';

const HOUR = 3_600_000;

const FLOW = `name: logged
tasks:
  charge: { kind: charge, max_attempts: 2, retry: { initial: 10ms } }
  quiet: { kind: quiet, deps: [charge] }
`;

function handlers(): Handlers {
  let calls = 0;
  return {
    charge: async (_args, ctx) => {
      calls++;
      ctx.log.info('charging', { amount: 12.5, card: 'visa' });
      if (calls === 1) {
        ctx.log.error('the provider said no');
        throw new Error('declined');
      }
      ctx.log.debug('charged');
      return { ok: true };
    },
    quiet: async () => ({}),
  };
}

describe(`task logs (${backend})`, () => {
  it("a handler's lines and braid's own about its attempts, per task and attempt, in order; through the API and braid logs", async () => {
    const rt = await drivenRuntime({ definitions: { logged: FLOW }, handlers: handlers() });
    await rt.startWorker();
    const id = await rt.start('logged');
    expect((await final(rt, id)).state).toBe('completed');
    const page = await rt.workflow(id).logs({ task: 'charge' });
    expect(page.lines.map((l) => [l.attempt, l.source, l.level, l.message])).toEqual([
      [1, 'braid', 'info', expect.stringMatching(/^attempt 1 started on worker /)],
      [1, 'handler', 'info', 'charging'],
      [1, 'handler', 'error', 'the provider said no'],
      [1, 'braid', 'error', expect.stringMatching(/^attempt 1 of 2 failed \(error\): declined; retry at \d{4}-/)],
      [2, 'braid', 'info', expect.stringMatching(/^attempt 2 started on worker /)],
      [2, 'handler', 'info', 'charging'],
      [2, 'handler', 'debug', 'charged'],
    ]);
    expect(page.lines[1].fields).toEqual({ amount: 12.5, card: 'visa' });
    // status lists every attempt with when it started, how long it took, its worker and how it ended
    const text = renderStatus(JSON.parse(JSON.stringify(await rt.workflow(id).status())));
    const attempts = text
      .slice(text.indexOf('\nATTEMPTS\n') + 10)
      .trim()
      .split('\n');
    expect(attempts).toEqual([
      expect.stringMatching(/^charge#1 {2}\d{4}-[\d\-T:.]+Z {2}\d+(\.\d)?m?s {2}worker \S+ {2}error: declined$/),
      expect.stringMatching(/^charge#2 {2}\d{4}-[\d\-T:.]+Z {2}\d+(\.\d)?m?s {2}worker \S+ {2}completed$/),
      expect.stringMatching(/^quiet#1 {2}\d{4}-[\d\-T:.]+Z {2}\d+(\.\d)?m?s {2}worker \S+ {2}completed$/),
    ]);
    expect(page.has_more).toBe(false);
    // a task that logs nothing has no lines; one attempt's lines; paging by `after`
    expect((await rt.workflow(id).logs({ task: 'quiet' })).lines).toEqual([]);
    expect((await rt.workflow(id).logs({ task: 'charge', attempt: 2 })).lines.map((l) => l.message)).toEqual([
      expect.stringMatching(/^attempt 2 started/),
      'charging',
      'charged',
    ]);
    const first = await rt.workflow(id).logs({ limit: 3 });
    expect(first.has_more).toBe(true);
    const rest = await rt.workflow(id).logs({ after: first.next_after!, limit: 100 });
    expect([...first.lines, ...rest.lines].map((l) => l.id)).toEqual(page.lines.map((l) => l.id));
    await expect(rt.workflow(id).logs({ task: 'nope' })).rejects.toMatchObject({ code: 'task_not_found' });
    await expect(rt.workflow('nope').logs()).rejects.toMatchObject({ code: 'workflow_not_found' });

    const server = await startApiServer(rt, { token: 't' });
    try {
      const api = new ApiClient(server.url, 't');
      expect((await api.logs(id, { task: 'charge', attempt: 1 })).lines.map((l) => l.message)).toEqual([
        expect.stringMatching(/^attempt 1 started/),
        'charging',
        'the provider said no',
        expect.stringMatching(/^attempt 1 of 2 failed/),
      ]);
      const bad = await fetch(`${server.url}/api/workflows/${id}/logs?after=x`, { headers: { authorization: 'Bearer t' } });
      expect(bad.status).toBe(400);
    } finally {
      await server.close();
    }
  });

  it('a handler writing a million lines keeps the bound and a count of what was dropped, and the worker stays flat', async () => {
    const rt = await drivenRuntime({
      definitions: { loud: 'name: loud\ntasks:\n  shout: { kind: shout }\n' },
      taskLog: { maxLines: 100 },
      handlers: {
        shout: async (_args, ctx) => {
          const before = process.memoryUsage().heapUsed;
          for (let i = 0; i < 1_000_000; i++) ctx.log.info(`line ${i}`, { i });
          return { grew: process.memoryUsage().heapUsed - before };
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('loud');
    expect((await final(rt, id)).state).toBe('completed');
    const { output } = await rt.workflow(id).task('shout');
    // a million kept lines would be hundreds of MiB; the bound keeps a hundred
    expect((output as { grew: number }).grew).toBeLessThan(64 * 1024 * 1024);
    const lines = (await rt.workflow(id).logs({ limit: 5000 })).lines;
    expect(lines).toHaveLength(102);
    expect(lines[100].message).toBe('line 99');
    expect(lines[101]).toMatchObject({
      source: 'braid',
      level: 'warn',
      message: `999900 more line(s) (${String(lines[101].fields?.dropped_bytes)} bytes) were dropped: an attempt keeps 100 lines and 262144 bytes`,
      fields: { dropped_lines: 999_900 },
    });
  }, 120_000);

  it('lines no string or JSON can break: control characters, NUL, lone surrogates, cycles, huge messages', async () => {
    const rt = await drivenRuntime({
      definitions: { odd: 'name: odd\ntasks:\n  t: { kind: odd }\n' },
      handlers: {
        odd: async (_args, ctx) => {
          const cycle: Record<string, unknown> = {};
          cycle.self = cycle;
          ctx.log.warn('nul \u0000 and \ud800 and \x1b[2J', { 'k\u0000': 'v\ud800', n: 10n as unknown as number });
          ctx.log.info('cyclic', cycle);
          ctx.log.info('x'.repeat(100_000));
          ctx.log.info(42 as unknown as string, ['a', 1] as unknown as Record<string, unknown>);
          return {};
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('odd');
    expect((await final(rt, id)).state).toBe('completed');
    const lines = (await rt.workflow(id).logs()).lines.filter((l) => l.source === 'handler');
    expect(lines.map((l) => l.message.slice(0, 40))).toEqual([
      'nul \\u0000 and \\ud800 and \x1b[2J',
      '(a log line that could not be read)',
      'x'.repeat(40),
      '42',
    ]);
    expect(lines[0].fields).toEqual({ 'k\\u0000': 'v\\ud800', n: '10' });
    expect(lines[2].message).toMatch(/\.\.\. \(91808 more characters\)$/);
    expect(lines[3].fields).toEqual({ value: ['a', 1] });
    // the CLI prints what a terminal cannot be harmed by
    expect(renderLine(lines[0])).not.toContain('\x1b');
  });

  it('go with their workflow at retention', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      virtualClock: clock,
      retention: { closedMs: HOUR, cancelledMs: HOUR },
      definitions: { logged: FLOW },
      handlers: handlers(),
    });
    await rt.startWorker();
    const id = await rt.start('logged');
    await final(rt, id);
    const count = async () =>
      (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".task_logs WHERE workflow_id = $1`, [id])).rows[0].n;
    expect(await count()).toBe(7);
    clock.advance(2 * HOUR);
    expect((await rt.maintenance()).deleted).toBe(1);
    expect(await count()).toBe(0);
  });
});
