import { describe, expect, it } from 'vitest';
import { createPostgres } from '../../src/runtime/db/postgres.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { patient } from '../helpers/patience.js';
import { backend, drivenRuntime, final, postgresUrl, settle, settled, testDatabase, testRuntime, uniqueSchema, until } from '../helpers/runtime.js';

const sla = `name: sla
tasks:
  first: { kind: step }
  escalate:
    kind: step
    deps: [first]
    wait: { terms: { late: { timer: { after_wait_started: 1h } } } }
`;

function counting() {
  const runs: string[] = [];
  const handlers: Handlers = {
    step: async (_args, ctx) => {
      runs.push(ctx.taskName);
      return null;
    },
  };
  return { runs, handlers };
}

describe(`timers are durable (${backend})`, () => {
  it('a timer that came due while no runtime ran fires once at the next start', async () => {
    const clock = new VirtualClock(new Date());
    const schema = uniqueSchema();
    const before = counting();
    const a = await drivenRuntime({ schema, virtualClock: clock, handlers: before.handlers, definitions: { sla } });
    await a.startWorker();
    const id = await a.start('sla');
    await settled(a, async () => (await a.workflow(id).task('escalate')).wait?.phase === 'waiting');
    await a.stop();
    clock.advance(2 * 3_600_000);
    const after = counting();
    const b = await drivenRuntime({ schema, virtualClock: clock, handlers: after.handlers, database: await testDatabase() });
    await b.startWorker();
    await settle(b);
    expect((await b.workflow(id).load()).state).toBe('completed');
    expect(before.runs).toEqual(['first']);
    expect(after.runs).toEqual(['escalate']);
    expect((await b.maintenance()).timers).toBe(0);
  });

  it('two runtimes firing timers at once: each timer fires once and its task runs once', async () => {
    const clock = new VirtualClock(new Date());
    const schema = uniqueSchema();
    const { runs, handlers } = counting();
    const a = await drivenRuntime({ schema, virtualClock: clock, handlers, definitions: { sla } });
    const b = await drivenRuntime({
      schema,
      virtualClock: clock,
      handlers,
      database: backend === 'postgres' ? createPostgres({ connectionString: postgresUrl, max: 5 }) : await testDatabase(),
    });
    await a.startWorker();
    const ids = await Promise.all(Array.from({ length: 10 }, () => a.start('sla')));
    await settled(a, async () => {
      for (const id of ids) if ((await a.workflow(id).task('escalate')).wait?.phase !== 'waiting') return false;
      return true;
    });
    // both fire timers and both run what they make available
    await b.startWorker();
    clock.advance(2 * 3_600_000);
    const [ra, rb] = await Promise.all([a.maintenance(), b.maintenance()]);
    expect(ra.timers + rb.timers).toBe(10);
    await Promise.all([settle(a), settle(b)]);
    for (const id of ids) expect((await a.workflow(id).load()).state).toBe('completed');
    expect(runs.filter((r) => r === 'escalate')).toHaveLength(10);
    await b.stop();
    if (backend === 'postgres') await b.db.close();
  });

  it('the leader fires a near timer on time without being asked (NOTIFY wake-up, real clock)', async () => {
    const { runs, handlers } = counting();
    const rt = await testRuntime({
      handlers,
      timerIntervalMs: 60_000,
      definitions: { soon: 'name: soon\ntasks:\n  t:\n    kind: step\n    wait: { terms: { later: { timer: { after_wait_started: 300ms } } } }\n' },
    });
    await rt.startWorker();
    await until(() => rt.isLeader);
    const t0 = Date.now();
    const id = await rt.start('soon');
    expect((await rt.workflow(id).waitUntilFinal({ timeoutMs: patient(20_000), pollMs: 10 })).state).toBe('completed');
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(300);
    // far less than the 60 s poll interval: the insert's NOTIFY woke the leader
    expect(took).toBeLessThan(patient(10_000));
    expect(runs).toEqual(['t']);
  });
});

describe.runIf(backend === 'postgres')('concurrent signals (real Postgres)', () => {
  it('50 signals for a count: 50 quorum, emitted at once from 10 connections, resolve the wait exactly once', async () => {
    const { runs, handlers } = counting();
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        fifty: 'name: fifty\ntasks:\n  go:\n    kind: step\n    wait: { terms: { votes: { signal: vote, where: "payload.yes == true", count: 50 } } }\n',
      },
    });
    await rt.startWorker();
    const id = await rt.start('fifty');
    await settled(rt, async () => (await rt.workflow(id).task('go')).wait?.phase === 'waiting');
    const pools = Array.from({ length: 10 }, () => createPostgres({ connectionString: postgresUrl, max: 1 }));
    const others = await Promise.all(pools.map((db) => testRuntime({ schema: rt.schema, database: db })));
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => others[i % 10].workflow(id).signals.emit('vote', { yes: true, i })));
    expect(results.filter((r) => r.resolved.length > 0)).toHaveLength(1);
    expect((await final(rt, id)).state).toBe('completed');
    expect(runs).toEqual(['go']);
    const evidence = (await rt.workflow(id).task('go')).wait!.evidence!;
    expect(evidence.terms[0]).toMatchObject({ matched: 50, required: 50, value: true });
    expect([...evidence.signal_ids].sort()).toEqual(results.map((r) => r.signal.id).sort());
    for (const db of pools) await db.close();
  });
});
