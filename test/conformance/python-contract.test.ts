import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { outputProblems } from '../../src/compiler/returns.js';
import { repoRoot } from '../helpers/cli.js';

type Schema = Record<string, unknown>;

const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.record({ type: fc.constant('integer'), minimum: fc.integer({ min: -2, max: 2 }), maximum: fc.integer({ min: -2, max: 3 }) }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant('number'), exclusiveMaximum: fc.constantFrom(0, 1.5, 3) }, { requiredKeys: ['type'] }),
  fc.record(
    { type: fc.constant('string'), minLength: fc.nat(2), maxLength: fc.nat(3), pattern: fc.constantFrom('^a', 'b$', '^[ab]*$') },
    { requiredKeys: ['type'] },
  ),
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc.record({ enum: fc.uniqueArray(fc.constantFrom(1, 'a', true, null, 2.5), { minLength: 1, maxLength: 3 }) }),
  fc.record({ const: fc.constantFrom(0, 'b', false) }),
);

const { schema } = fc.letrec<{ schema: Schema }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record(
      {
        type: fc.constant('object'),
        properties: fc.record({ a: tie('schema'), b: tie('schema') }, { requiredKeys: [] }),
        required: fc.subarray(['a', 'b']),
        additionalProperties: fc.boolean(),
      },
      { requiredKeys: ['type'] },
    ),
    fc.record(
      { type: fc.constant('array'), items: tie('schema'), minItems: fc.nat(2), maxItems: fc.nat(3), uniqueItems: fc.boolean() },
      { requiredKeys: ['type'] },
    ),
    fc.record({ anyOf: fc.array(tie('schema'), { minLength: 1, maxLength: 2 }) }),
    fc.record({ oneOf: fc.array(tie('schema'), { minLength: 1, maxLength: 2 }) }),
    fc.record({ not: tie('schema') }),
  ),
}));

const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(-3, -1, 0, 1, 2, 3, 1.5, 'a', 'ab', 'b', '', 'ba', true, false, null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.record({ a: tie('value'), b: tie('value'), c: tie('value') }, { requiredKeys: [] }),
  ),
}));

/** What a line of Python with braid_worker on its path prints as JSON, given `input` on stdin as JSON. */
function python<T>(code: string, input?: unknown): T {
  const r = spawnSync('/usr/bin/python3', ['-c', `import json, sys\n${code}`], {
    input: input === undefined ? undefined : JSON.stringify(input),
    env: { ...process.env, PYTHONPATH: join(repoRoot, 'clients/python') },
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as T;
}

describe('the Python worker checks outputs against returns as braid does', () => {
  it('its validator agrees with braid own (ajv) on 600 random schemas and outputs', () => {
    // as JSON carries them (fast-check may make objects without a prototype)
    const pairs = JSON.parse(JSON.stringify(fc.sample(fc.tuple(schema, value), 600))) as [Schema, unknown][];
    const theirs = python<boolean[]>(
      'from braid_worker.contract import problems; print(json.dumps([not problems(s, v) for s, v in json.load(sys.stdin)]))',
      pairs,
    );
    const mismatches = pairs
      .map(([s, v], i) => ({ schema: s, value: v, ajv: outputProblems(s, v).length === 0, python: theirs[i] }))
      .filter((m) => m.ajv !== m.python);
    expect(mismatches).toEqual([]);
    // both sides saw outputs that fit and outputs that do not
    expect(new Set(theirs).size).toBe(2);
  });
});

/** Patterns from a small grammar of what schemas write: classes, escapes, groups, alternation, repeats, anchors. */
const { pattern } = fc.letrec<{ pattern: string }>((tie) => ({
  pattern: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('a', 'b', '-', '.', '\\d', '\\w', '\\s', '[ab]', '[^a]', '[a-c]', '\\.', '\\x41', '\\u0062', '\\bab'),
    fc.tuple(tie('pattern'), tie('pattern')).map(([x, y]) => x + y),
    fc.tuple(tie('pattern'), tie('pattern')).map(([x, y]) => `(?:${x}|${y})`),
    fc.tuple(tie('pattern'), fc.constantFrom('*', '+', '?', '{2}', '{1,3}', '{0,}', '*?')).map(([x, q]) => `(${x})${q}`),
    tie('pattern').map((x) => `^${x}`),
    tie('pattern').map((x) => `${x}$`),
  ),
}));

describe('the Python worker matches patterns as braid does, in linear time', () => {
  it('agrees with braid own linear-time engine (RE2) on 1,500 random patterns and strings', async () => {
    const { compileLinear } = await import('../../src/compiler/regex.js');
    const cases = fc.sample(fc.tuple(pattern, fc.string({ unit: fc.constantFrom('a', 'b', 'c', '-', '1', ' ', 'A', '.', '_'), maxLength: 8 })), 1500);
    const theirs = python<boolean[]>('from braid_worker.linear_re import search; print(json.dumps([search(p, t) for p, t in json.load(sys.stdin)]))', cases);
    const mismatches = cases.map(([p, t], i) => ({ p, t, re2: compileLinear(p).matcher(t).find(), python: theirs[i] })).filter((m) => m.re2 !== m.python);
    expect(mismatches).toEqual([]);
    expect(new Set(theirs).size).toBe(2);
  });

  it('checks ^(a+)+$ against a 30-character output at once, where a backtracking engine takes minutes', () => {
    const began = Date.now();
    const said = python<string[]>(
      'from braid_worker.contract import problems; print(json.dumps(problems({"type": "string", "pattern": "^(a+)+$"}, "a" * 29 + "!")))',
    );
    expect(said).toEqual(['/: must match /^(a+)+$/']);
    // the interpreter's own start included; the backtracking engine took 70 s here
    expect(Date.now() - began).toBeLessThan(10_000);
  });
});
