/**
 * The privacy room's scrubbing, as pure functions: a sensitive value and its common renderings leave every text
 * and JSON value it scrubs, what is not sensitive stays, and matching stays linear on hostile text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Secrets, scrubError, scrubJson, scrubOutcome, scrubText } from '../../src/runtime/core/privacy.js';

const card = '4242424242424242';
const of = (...values: string[]) => Secrets.of(new Set(values));

describe('the privacy room', () => {
  it('redacts a value and its renderings: spaced, dashed, dotted digits, JSON-escaped text', () => {
    const s = of(card, 'O"Brien\\n');
    expect(scrubText(`card ${card} declined`, s)).toBe('card [redacted] declined');
    expect(scrubText('card 4242 4242 4242 4242 declined', s)).toBe('card [redacted] declined');
    expect(scrubText('4242-4242-4242-4242/4242.4242.4242.4242', s)).toBe('[redacted]/[redacted]');
    expect(scrubText(JSON.stringify({ who: 'O"Brien\\n' }), s)).toBe('{"who":"[redacted]"}');
    // other digits, and the last four alone, stay
    expect(scrubText('card ending 4242, order 4242424242424241', s)).toBe('card ending 4242, order 4242424242424241');
  });

  it('scrubs every text of an error (message, name, stack, code) and every string, key and number of JSON', () => {
    const s = of(card, '31337');
    const e = scrubError({ message: `no ${card}`, name: `E${card}`, stack: `Error: no ${card}\n  at x`, code: `c_${card}` }, s);
    expect(JSON.stringify(e)).not.toContain(card);
    expect(e.message).toBe('no [redacted]');
    expect(scrubOutcome({ type: 'snooze', ms: 5 }, s)).toEqual({ type: 'snooze', ms: 5 });
    expect(scrubJson({ [card]: [card, 31337, 7, { deep: `x${card}` }] }, s)).toEqual({
      '[redacted]': ['[redacted]', '[redacted]', 7, { deep: 'x[redacted]' }],
    });
  });

  it('without secrets, leaves text as it is (made storable)', () => {
    expect(scrubText('a\u0000b', Secrets.none)).toBe('a\\u0000b');
    expect(scrubJson({ a: 1 }, Secrets.none)).toEqual({ a: 1 });
  });

  it('never leaves a secret in any text that holds it, however it is surrounded (fast-check)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 4, maxLength: 40 }), fc.string(), fc.string(), (secret, before, after) => {
        const out = scrubText(`${before}${secret}${after}`, of(secret));
        expect(out).not.toContain(secret);
      }),
      { numRuns: 500 },
    );
  });

  it('stays linear on hostile text: many secrets against long runs of near-misses', () => {
    const secrets = of(...Array.from({ length: 50 }, (_, i) => `4${String(i).padStart(15, '0')}`));
    const hostile = '4 0-0.0 '.repeat(5_000);
    const began = performance.now();
    scrubText(hostile, secrets);
    // a backtracking blow-up takes minutes; linear matching a fraction of a second even on a busy machine
    expect(performance.now() - began).toBeLessThan(10_000);
  });
});
