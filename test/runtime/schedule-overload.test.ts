/**
 * A leader that cannot keep up with its schedules: 1,000 `every: 1s` schedules on a clock that moves on with
 * every reading (each tick the leader starts costs it time), so every schedule falls behind. Every schedule
 * still gets runs (one tick a schedule a round, the longest-waiting first), and the ticks passed over are counted
 * per schedule, in `braid schedules`' records, the metric and a warning said at most once a minute.
 */
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/runtime/telemetry/metrics.js';
import { backend, DRIVEN, testRuntime } from '../helpers/runtime.js';

const DEFINITIONS = 20;
const PER_DEFINITION = 50;

const definition = (n: number) =>
  `name: tick_${n}\nschedules:\n${Array.from({ length: PER_DEFINITION }, (_, i) => `  - { name: s${i}, every: 1s, overlap: allow }`).join(
    '\n',
  )}\ntasks:\n  t: { kind: t }\n`;

describe(`schedules on a leader that falls behind (${backend})`, () => {
  it('1,000 every-1s schedules: each gets runs, the ticks passed over are counted and said once a minute at most', async () => {
    let at = Date.parse('2027-01-01T00:00:00Z');
    // each reading of the clock costs 600 ms of virtual time: a tick takes the leader longer than a second, so
    // every schedule is always due again (the leader that saw 85 of 1,000 schedules never run)
    const clock = () => new Date((at += 600));
    const said: string[] = [];
    const metrics = new Metrics();
    const rt = await testRuntime({
      ...DRIVEN,
      clock,
      metrics,
      logger: { info: () => undefined, warn: (m) => said.push(m), taskDone: () => undefined },
      definitions: Object.fromEntries(Array.from({ length: DEFINITIONS }, (_, n) => [`tick_${n}`, definition(n)])),
    });
    const all = await rt.schedules.list();
    expect(all).toHaveLength(DEFINITIONS * PER_DEFINITION);
    at += 5_000;
    const ran = async () => {
      const { rows } = await rt.db.query<{ schedule: string; name: string; n: number }>(
        `SELECT name, schedule, count(*)::int AS n FROM "${rt.schema}".workflows WHERE schedule IS NOT NULL GROUP BY name, schedule`,
      );
      return rows;
    };
    // passes, each bounded by the leader's interval: the schedules not reached wait first in the next
    for (let pass = 0; pass < 60 && (await ran()).length < all.length; pass++) await rt.maintenance({ only: ['scheduled'] });
    // and on: every schedule keeps getting its turn
    for (let pass = 0; pass < 4; pass++) await rt.maintenance({ only: ['scheduled'] });
    const counts = await ran();
    // in turn: no schedule got more than a round's tick ahead of another
    const n = counts.map((c) => c.n);
    expect(Math.max(...n) - Math.min(...n)).toBeLessThanOrEqual(1);
    expect(counts).toHaveLength(all.length);
    const records = await rt.schedules.list();
    const missed = records.reduce((sum, s) => sum + s.missed_ticks, 0);
    expect(missed).toBeGreaterThan(all.length);
    expect(records.filter((s) => s.missed_ticks > 0).length).toBeGreaterThan(all.length / 2);
    expect(records.every((s) => s.missed_ticks === 0 || s.missed_at !== null)).toBe(true);
    // the warning names the count and the schedules, at most once per minute of the leader's clock
    const warnings = said.filter((l) => l.includes('schedule tick(s) missed by'));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings[0]).toMatch(/^leader: \d+ schedule tick\(s\) missed by \d+ schedule\(s\) \(tick_\d+\/s\d+/);
    const text = await metrics.text();
    const gauge = Number(/^braid_schedule_missed_ticks (\S+)$/m.exec(text)?.[1]);
    expect(gauge).toBe(missed);
    expect(Number(/^braid_schedule_lag_seconds (\S+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
  }, 300_000);
});
