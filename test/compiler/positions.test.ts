import { describe, expect, it } from 'vitest';
import { isScalar, parseDocument, type Scalar, visit } from 'yaml';
import { canonicalJson } from '../../src/compiler/canonical-json.js';
import { scalarOffsets } from '../../src/compiler/cel/scalar-offsets.js';
import { scanTemplates } from '../../src/compiler/cel/templates.js';
import { parseDuration } from '../../src/compiler/duration.js';

function scalars(src: string): Scalar[] {
  const out: Scalar[] = [];
  visit(parseDocument(src, { keepSourceTokens: true }), {
    Pair(_, pair) {
      if (isScalar(pair.value) && typeof pair.value.value === 'string') out.push(pair.value);
    },
  });
  return out;
}

describe('scalar offsets: every value character maps to its source character', () => {
  const src = [
    'plain: a && b',
    "single: 'it''s x'",
    'double: "tab\\there \\"q\\" \\u00e9 end"',
    'literal: |',
    '  first',
    '    second',
    'folded: >-',
    '  one',
    '  two',
    '',
    '  three',
    'multi: first',
    '  second line',
    'escaped_break: "a \\',
    '  b"',
  ].join('\n');

  it.each(scalars(src).map((s) => [String(s.value), s]))('%j', (_, node) => {
    const s = node as Scalar;
    const value = String(s.value);
    const offsets = scalarOffsets(s, src)!;
    expect(offsets).toHaveLength(value.length + 1);
    const distinct = new Set(offsets.slice(0, -1));
    expect(distinct.size).toBe(value.length);
    for (let i = 0; i < value.length; i++) {
      const c = value[i];
      if (/[A-Za-z0-9&]/.test(c) && !/\\u/.test(src.slice(offsets[i] - 1, offsets[i] + 1)))
        expect(src[offsets[i]], `char ${i} of ${JSON.stringify(value)}`).toBe(c);
    }
  });
});

describe('template scanning', () => {
  it('finds templates, skips $${{ and braces inside the expression', () => {
    const s = 'a ${{ {"k": {"n": 1}}["k"] }} b $${{ no }} c ${{ "}}" + x }}';
    const { spans } = scanTemplates(s);
    expect(spans.map((t) => t.expr.trim())).toEqual(['{"k": {"n": 1}}["k"]', '"}}" + x']);
    expect(scanTemplates('x ${{ open').unclosedAt).toBe(2);
  });
});

describe('durations', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['15m', 900_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    ['PT30M', 1_800_000],
    ['P1DT2H', 93_600_000],
    ['P2W', 1_209_600_000],
    ['PT0.5S', 500],
  ])('%s = %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '30', 'x', 'P', 'PT', 'P1M', '5 minutes', '1y'])('%j is not a duration', (text) => expect(parseDuration(text)).toBeUndefined());
});

describe('canonical JSON (RFC 8785)', () => {
  it('sorts keys by code unit, drops whitespace, serialises numbers as ECMAScript does', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], é: 1e21, A: 0.1, '\u20ac': -0 })).toBe('{"A":0.1,"a":[true,null,"x"],"b":1,"é":1e+21,"€":0}');
  });
});
