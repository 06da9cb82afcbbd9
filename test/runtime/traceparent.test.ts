import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatTraceParent, loadTraceParent, parseTraceParent, storeTraceParent } from '../../src/runtime/telemetry/traceparent.js';
import { runCliInProcess } from '../helpers/cli.js';

const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));

describe('W3C traceparent', () => {
  it('reads back what it writes, with its tracestate, for every valid id', () => {
    fc.assert(
      fc.property(hex(32), hex(16), fc.integer({ min: 0, max: 255 }), fc.option(fc.constantFrom('vendor=x', 'a=1,b=2')), (traceId, spanId, flags, state) => {
        fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId));
        const p = { traceId, spanId, traceFlags: flags, ...(state ? { traceState: state } : {}) };
        expect(parseTraceParent(formatTraceParent(p))).toEqual({ traceId, spanId, traceFlags: flags });
        expect(loadTraceParent(storeTraceParent(p))).toEqual(p);
      }),
    );
  });

  it('refuses anything else, never throwing', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        const p = parseTraceParent(s);
        if (p) expect(formatTraceParent(p)).toBe(s.trim());
      }),
    );
    for (const bad of [
      '',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
    ])
      expect(parseTraceParent(bad)).toBeNull();
    expect(loadTraceParent(null)).toBeNull();
  });

  it('braid start and braid signal refuse a malformed --traceparent as a usage error', async () => {
    for (const args of [
      ['start', 'any', '--traceparent', 'nope'],
      ['signal', 'id', 'key', '--traceparent', '00-xyz'],
    ]) {
      const r = await runCliInProcess(args, { env: { DATABASE_URL: '' } });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^braid: --traceparent must be a W3C traceparent \(00-<32 hex trace id>-<16 hex span id>-<2 hex flags>\), not "/);
    }
  });
});
