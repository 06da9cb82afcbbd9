import { describe, expect, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { patient } from '../helpers/patience.js';
import { exited, invocationTable, printed, runtimeProcess } from '../helpers/processes.js';
import { backend, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

const TICK = `name: tick
inputs: { type: object, properties: { at: { type: string } } }
schedules:
  - name: every_2s
    every: 2s
    catchup: 30s
    overlap: allow
    inputs: { at: "\${{ schedule.time }}" }
tasks:
  only: { kind: work }
`;

/** The nominal ticks of the runs started so far, as epoch ms, with how late each started (created_at minus tick). */
async function runs(rt: Awaited<ReturnType<typeof testRuntime>>): Promise<{ tick: number; lateMs: number; created: number }[]> {
  const { rows } = await rt.db.query<{ id: string; created_at: Date }>(`SELECT id, created_at FROM "${rt.schema}".workflows WHERE schedule = 'every_2s'`);
  return rows
    .map((r) => {
      const tick = Date.parse(r.id.slice('tick:every_2s:'.length));
      return { tick, lateMs: new Date(r.created_at).getTime() - tick, created: new Date(r.created_at).getTime() };
    })
    .sort((a, b) => a.tick - b.tick);
}

/** Whether the ticks are every 2 s from the first to the last, none missing. */
function contiguous(ticks: number[]): boolean {
  return ticks.every((t, i) => i === 0 || t - ticks[i - 1] === 2000);
}

describe.runIf(backend === 'postgres')('schedules across runtime processes on one Postgres', () => {
  it('an every 2s schedule fires on time; after its leader is SIGKILLed for 20 s the missed ticks within catchup start once each, in order; racing leaders start no tick twice', async () => {
    const rt = await testRuntime({ definitions: { tick: TICK }, leader: false });
    const table = await invocationTable(rt.db);
    const first = runtimeProcess({ schema: rt.schema, table, leaderLeaseMs: 1000 });
    await printed(first, 'leading');
    await until(async () => (await runs(rt)).length >= 4, 30_000, 100);
    const onTime = (await runs(rt)).slice(1);
    // the leader wakes for each tick: it starts within a poll of its time, on a busy machine too
    for (const r of onTime) expect(r.lateMs).toBeLessThan(patient(1500));
    expect(onTime.map((r) => r.lateMs).sort((a, b) => a - b)[Math.floor(onTime.length / 2)]).toBeLessThan(patient(500));

    first.child.kill('SIGKILL');
    await exited(first.child);
    const down = Date.now();
    const before = await runs(rt);
    await new Promise((r) => setTimeout(r, 20_000));
    // two processes come up at once and race for the lease; the test's own process runs the service by hand
    // meanwhile, unfenced, as a third contender for the same rows
    const racers = [runtimeProcess({ schema: rt.schema, table, leaderLeaseMs: 1000 }), runtimeProcess({ schema: rt.schema, table, leaderLeaseMs: 1000 })];
    const byHand = (async () => {
      for (let i = 0; i < 20; i++) await rt.maintenance({ only: ['scheduled'] });
    })();
    await Promise.race(racers.map((p) => printed(p, 'leading')));
    await byHand;
    await until(async () => (await runs(rt)).some((r) => r.created > down + 20_000 && r.tick > down + 20_000), 30_000, 100);
    const after = await runs(rt);
    const ticks = after.map((r) => r.tick);
    // each tick once (the business key is the id), every 2 s with none missing across the outage
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(contiguous(ticks)).toBe(true);
    const missed = after.filter((r) => r.tick > before[before.length - 1].tick && r.tick <= down + 20_000);
    expect(missed.length).toBeGreaterThanOrEqual(9);
    // caught up oldest first
    const caughtUp = missed.map((r) => r.created);
    expect([...caughtUp].sort((a, b) => a - b)).toEqual(caughtUp);
    const { rows } = await rt.db.query<{ outcome: string | null }>(`SELECT last_outcome AS outcome FROM "${rt.schema}".schedules`);
    expect(rows).toEqual([{ outcome: 'started' }]);
    for (const p of racers) p.child.kill('SIGTERM');
    await Promise.all(racers.map((p) => exited(p.child)));
  }, 120_000);
});
