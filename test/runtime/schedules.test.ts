import { describe, expect, it } from 'vitest';
import { ScheduleNotFoundError } from '../../src/runtime/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { patient } from '../helpers/patience.js';
import { advance, backend, clockOf, drivenRuntime, settle, testRuntime, until } from '../helpers/runtime.js';

const T0 = new Date('2027-01-01T00:00:00Z');

/** A workflow a schedule starts: it waits for a signal `done`, so a run stays running until the test says. */
const report = (schedule: string) => `name: report
inputs:
  type: object
  required: [at]
  properties:
    at: { type: string }
    source: { type: string }
schedules:
${schedule}
tasks:
  gather:
    kind: gather
    wait:
      terms:
        released: { signal: done }
`;

async function scheduled(schedule: string, o: { start?: Date } = {}): Promise<Runtime> {
  const rt = await drivenRuntime({
    definitions: { report: report(schedule) },
    virtualClock: new VirtualClock(o.start ?? T0),
    handlers: { gather: async () => ({}) },
  });
  await rt.startWorker();
  return rt;
}

async function runs(rt: Runtime): Promise<{ id: string; state: string }[]> {
  const { workflows } = await rt.listWorkflows({ name: 'report', limit: 500 });
  return workflows.map((w) => ({ id: w.id, state: w.state })).sort((a, b) => a.id.localeCompare(b.id));
}

async function release(rt: Runtime, id: string): Promise<void> {
  await rt.workflow(id).signals.emit('done', {});
  await settle(rt);
}

describe(`schedules (${backend})`, () => {
  it('an every schedule starts one run per tick, with the tick in its key and inputs, from its deploy on', async () => {
    const rt = await scheduled(`  - name: hourly
    every: 1h
    overlap: allow
    inputs: { at: "\${{ schedule.time }}", source: "\${{ schedule.name }}" }`);
    const [s] = await rt.schedules.list('report', { next: 3 });
    expect(s).toMatchObject({ workflow: 'report', name: 'hourly', every_ms: 3_600_000, timezone: 'UTC', overlap: 'allow', paused: false, last_tick: null });
    expect(s.next_ticks.map((t) => t.time)).toEqual(['2027-01-01T01:00:00Z', '2027-01-01T02:00:00Z', '2027-01-01T03:00:00Z']);
    await advance(rt, 3 * 3_600_000);
    const ids = (await runs(rt)).map((r) => r.id);
    expect(ids).toEqual(['report:hourly:2027-01-01T01:00:00Z', 'report:hourly:2027-01-01T02:00:00Z', 'report:hourly:2027-01-01T03:00:00Z']);
    expect((await rt.workflow(ids[0]).load()).inputs).toEqual({ at: '2027-01-01T01:00:00.000Z', source: 'hourly' });
    const after = await rt.schedules.get('report', 'hourly');
    expect(after).toMatchObject({ last_tick: '2027-01-01T03:00:00Z', last_outcome: 'started', last_run_id: ids[2] });
    expect(after.recent_runs.map((r) => r.id)).toEqual([...ids].reverse());
  });

  it('after downtime, the missed ticks within catchup start once each, oldest first; without catchup only the latest', async () => {
    const rt = await scheduled(`  - name: caught
    every: 10m
    catchup: 30m
    overlap: allow
    inputs: { at: "\${{ schedule.time }}" }
  - name: latest
    every: 10m
    overlap: allow
    inputs: { at: "\${{ schedule.time }}" }`);
    // the leader is away for two hours: the clock moves with nothing run
    clockOf(rt).set(new Date(T0.getTime() + 2 * 3_600_000 + 60_000));
    await settle(rt);
    const ids = (await runs(rt)).map((r) => r.id);
    expect(ids.filter((id) => id.includes(':caught:'))).toEqual([
      'report:caught:2027-01-01T01:40:00Z',
      'report:caught:2027-01-01T01:50:00Z',
      'report:caught:2027-01-01T02:00:00Z',
    ]);
    expect(ids.filter((id) => id.includes(':latest:'))).toEqual(['report:latest:2027-01-01T02:00:00Z']);
    // and each only once, however often maintenance runs
    await rt.maintenance();
    await settle(rt);
    expect(await runs(rt)).toHaveLength(4);
  });

  it('a leader that starts ticks late says so once, with how late, and the schedule records its lateness', async () => {
    const said: string[] = [];
    const log = { info: (m: string) => said.push(`info ${m}`), warn: (m: string) => said.push(`warn ${m}`), taskDone: () => undefined };
    const rt = await drivenRuntime({
      definitions: { report: report(`  - name: tight\n    every: 10s\n    catchup: 1m\n    overlap: allow\n    inputs: { at: "\${{ schedule.time }}" }`) },
      virtualClock: new VirtualClock(T0),
      handlers: { gather: async () => ({}) },
      logger: log,
    });
    // the ticks of the last minute are due at once, the oldest a minute late
    clockOf(rt).set(new Date(T0.getTime() + 125_000));
    await settle(rt);
    // the catch-up's last tick (2:00) started 5 s after its time
    expect((await rt.schedules.get('report', 'tight')).last_lag_ms).toBe(5000);
    // on time again at the next passes: each said once
    await rt.maintenance();
    await advance(rt, 30_000);
    expect(said.filter((l) => l.includes('schedule ticks'))).toEqual([
      expect.stringMatching(/^warn leader: schedule ticks are starting late: the oldest due tick is 1m 55s past its time, 1 due now/),
      'info leader: schedule ticks start on time again',
    ]);
    expect((await rt.schedules.get('report', 'tight')).last_lag_ms).toBe(0);
  });

  it('overlap: skip, buffer_one, allow and cancel_previous against a run that is still running', async () => {
    const rt = await scheduled(
      ['skip', 'buffer_one', 'allow', 'cancel_previous']
        .map((o) => `  - name: ${o}\n    every: 1h\n    overlap: ${o}\n    inputs: { at: "\${{ schedule.time }}" }`)
        .join('\n'),
    );
    await advance(rt, 3 * 3_600_000);
    const byPolicy = async (p: string) => (await runs(rt)).filter((r) => r.id.startsWith(`report:${p}:`));
    expect((await byPolicy('skip')).map((r) => r.id)).toEqual(['report:skip:2027-01-01T01:00:00Z']);
    expect((await rt.schedules.get('report', 'skip')).last_outcome).toBe('skipped');
    expect(await byPolicy('buffer_one')).toEqual([{ id: 'report:buffer_one:2027-01-01T01:00:00Z', state: 'running' }]);
    expect((await rt.schedules.get('report', 'buffer_one')).buffered_tick).toBe('2027-01-01T02:00:00Z');
    expect((await byPolicy('allow')).map((r) => r.state)).toEqual(['running', 'running', 'running']);
    expect(await byPolicy('cancel_previous')).toEqual([
      { id: 'report:cancel_previous:2027-01-01T01:00:00Z', state: 'cancelled' },
      { id: 'report:cancel_previous:2027-01-01T02:00:00Z', state: 'cancelled' },
      { id: 'report:cancel_previous:2027-01-01T03:00:00Z', state: 'running' },
    ]);
    // the buffered tick starts once the run ends; the ticks after it were skipped while one was buffered
    await release(rt, 'report:buffer_one:2027-01-01T01:00:00Z');
    expect(await byPolicy('buffer_one')).toEqual([
      { id: 'report:buffer_one:2027-01-01T01:00:00Z', state: 'completed' },
      { id: 'report:buffer_one:2027-01-01T02:00:00Z', state: 'running' },
    ]);
    expect((await rt.schedules.get('report', 'buffer_one')).buffered_tick).toBeNull();
  });

  it('backfill starts every tick of the range once; a second backfill starts nothing; a dry run writes nothing', async () => {
    const rt = await scheduled(`  - name: daily
    cron: "0 6 * * *"
    timezone: Europe/Berlin
    paused: true
    inputs: { at: "\${{ schedule.time }}" }`);
    const dry = await rt.schedules.backfill('report', 'daily', new Date('2026-12-01T00:00:00Z'), new Date('2026-12-03T05:00:00Z'), { dryRun: true });
    expect(dry).toEqual([
      { time: '2026-12-01T05:00:00Z', id: 'report:daily:2026-12-01T05:00:00Z', status: 'would_start' },
      { time: '2026-12-02T05:00:00Z', id: 'report:daily:2026-12-02T05:00:00Z', status: 'would_start' },
      { time: '2026-12-03T05:00:00Z', id: 'report:daily:2026-12-03T05:00:00Z', status: 'would_start' },
    ]);
    expect(await runs(rt)).toEqual([]);
    const first = await rt.schedules.backfill('report', 'daily', new Date('2026-12-01T00:00:00Z'), new Date('2026-12-03T05:00:00Z'));
    expect(first.map((r) => r.status)).toEqual(['started', 'started', 'started']);
    const second = await rt.schedules.backfill('report', 'daily', new Date('2026-12-01T00:00:00Z'), new Date('2026-12-03T05:00:00Z'));
    expect(second.map((r) => r.status)).toEqual(['existing', 'existing', 'existing']);
    expect(await runs(rt)).toHaveLength(3);
  });

  it('pause stops the ticks, resume goes on from now without the ticks missed meanwhile; trigger starts a tick now', async () => {
    const rt = await scheduled(`  - name: hourly
    every: 1h
    overlap: allow
    inputs: { at: "\${{ schedule.time }}" }`);
    expect((await rt.schedules.pause('report', 'hourly')).paused).toBe(true);
    await advance(rt, 5 * 3_600_000 + 1000);
    expect(await runs(rt)).toEqual([]);
    const resumed = await rt.schedules.resume('report', 'hourly');
    expect(resumed.paused).toBe(false);
    expect(resumed.next_ticks[0].time).toBe('2027-01-01T06:00:00Z');
    await advance(rt, 3_600_000);
    expect((await runs(rt)).map((r) => r.id)).toEqual(['report:hourly:2027-01-01T06:00:00Z']);
    const now = clockOf(rt).now().toISOString().replace('.000Z', 'Z');
    const triggered = await rt.schedules.trigger('report', 'hourly');
    expect(triggered).toEqual({ time: now, id: `report:hourly:${now}`, status: 'started' });
    expect(await runs(rt)).toHaveLength(2);
    await expect(rt.schedules.pause('report', 'nightly')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await expect(rt.schedules.trigger('nope', 'hourly')).rejects.toThrow('workflow "nope" has no schedule "hourly" (it has no schedules)');
  });

  it('in real time, two leaders side by side and a pass by hand: an every 2s schedule starts each tick once, on time', async () => {
    const definitions = { report: report(`  - name: often\n    every: 2s\n    overlap: allow\n    inputs: { at: "\${{ schedule.time }}" }`) };
    const handlers = { gather: async () => ({}) };
    const first = await testRuntime({ definitions, handlers, leader: true, leaderLeaseMs: 1000 });
    const second = await testRuntime({ database: first.db, schema: first.schema, handlers, leader: true, leaderLeaseMs: 1000 });
    await first.startWorker();
    await second.startWorker();
    const ticks = async () =>
      (await first.listWorkflows({ name: 'report', limit: 500 })).workflows
        .map((w) => ({
          tick: Date.parse(w.id.slice('report:often:'.length)),
          late: new Date(w.created_at).getTime() - Date.parse(w.id.slice('report:often:'.length)),
        }))
        .sort((a, b) => a.tick - b.tick);
    await until(
      async () => {
        await first.maintenance({ only: ['scheduled'] });
        return (await ticks()).length >= 4;
      },
      60_000,
      250,
    );
    const seen = await ticks();
    expect(new Set(seen.map((t) => t.tick)).size).toBe(seen.length);
    for (let i = 1; i < seen.length; i++) expect(seen[i].tick - seen[i - 1].tick).toBe(2000);
    // the first may be the latest missed at start; the rest start within a poll of their time
    for (const t of seen.slice(1)) expect(t.late).toBeLessThan(patient(1500));
  });
});
