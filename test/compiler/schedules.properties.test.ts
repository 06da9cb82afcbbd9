import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type ScheduleTiming, ticksAfter } from '../../src/compiler/schedule/ticks.js';
import { wallOf } from '../../src/compiler/schedule/zone.js';
import { validate } from '../../src/index.js';

const field = fc.oneof(fc.constantFrom('*', '*/5', '0', '30', '1-5', '1,15', 'L', 'MON-FRI', 'JAN', '?', '61', '-1', '*/0', ''), fc.string({ maxLength: 6 }));
const cronish = fc.oneof(
  fc.array(field, { minLength: 0, maxLength: 8 }).map((f) => f.join(' ')),
  fc.constantFrom('@daily', '@hourly', '@weekly', '@monthly', '@yearly', '@sometimes', '30 2 * * *', '0 0 30 2 *'),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const zones = fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Apia', 'Europe/Berln', '', 'x/y');
const duration = fc.oneof(fc.constantFrom('1s', '500ms', '2s', '1h', '30m', '1d', '0s', 'P1D', 'soon'), fc.string({ maxLength: 8 }));
const anyValue = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }));

const schedule = fc.record(
  {
    name: fc.oneof(fc.constantFrom('nightly', 'sync', 'a'), fc.string({ maxLength: 8 })),
    cron: cronish,
    every: duration,
    timezone: zones,
    jitter: duration,
    catchup: duration,
    overlap: fc.oneof(fc.constantFrom('skip', 'buffer_one', 'allow', 'cancel_previous'), anyValue),
    dst: fc.oneof(
      fc.record({ repeated: fc.constantFrom('first', 'both', 'x'), skipped: fc.constantFrom('shift', 'skip', 'y') }, { requiredKeys: [] }),
      anyValue,
    ),
    start_at: fc.oneof(fc.constantFrom('2027-01-01T00:00:00Z', '2026-13-01T00:00:00Z', 'now'), fc.string({ maxLength: 10 })),
    end_at: fc.constantFrom('2028-01-01T00:00:00Z', '2026-01-01T00:00:00Z'),
    inputs: fc.oneof(
      fc.constant({ at: '${{ schedule.time }}' }),
      fc.constant({ at: '${{ schedule.nme }}' }),
      fc.dictionary(fc.string({ maxLength: 4 }), anyValue),
    ),
    paused: anyValue,
  },
  { requiredKeys: [] },
);

describe('schedules: property tests', () => {
  it('any schedules list validates to diagnostics at real positions, never a crash', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(schedule, { maxLength: 4 }), anyValue), (schedules) => {
        const text = stringify({ name: 'p', inputs: { type: 'object', properties: { at: { type: 'string' } } }, schedules, tasks: { a: { kind: 'x' } } });
        const result = validate([{ path: 'p.yaml', content: text }]);
        for (const d of result.diagnostics) {
          expect(d.line).toBeGreaterThanOrEqual(1);
          expect(d.column).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('ticks come strictly in order; a daily cron with repeated: first and skipped: shift runs once every local day, at or after its time', () => {
    const daily = fc.record({
      hour: fc.integer({ min: 0, max: 23 }),
      minute: fc.constantFrom(0, 15, 30, 45),
      zone: fc.constantFrom('Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Tehran', 'UTC'),
      from: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2028, 0, 1) }),
    });
    fc.assert(
      fc.property(daily, ({ hour, minute, zone, from }) => {
        const timing: ScheduleTiming = { cron: `${minute} ${hour} * * *`, timezone: zone, dst: { repeated: 'first', skipped: 'shift' } };
        const ticks: number[] = [];
        for (const t of ticksAfter(timing, from)) {
          ticks.push(t);
          if (ticks.length === 40) break;
        }
        const days = ticks.map((t) => new Date(wallOf(zone, t)).toISOString().slice(0, 10));
        expect(new Set(days).size).toBe(ticks.length);
        for (let i = 1; i < ticks.length; i++) expect(ticks[i]).toBeGreaterThan(ticks[i - 1]);
        for (const t of ticks) {
          const wall = new Date(wallOf(zone, t));
          expect(wall.getUTCHours() * 60 + wall.getUTCMinutes()).toBeGreaterThanOrEqual(hour * 60 + minute);
        }
      }),
      { numRuns: 200 },
    );
  });
});
