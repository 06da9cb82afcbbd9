import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/pacing/backoff.js';
import { describeError } from '../../src/runtime/core/describe-error.js';
import { findUnstorable, storableText } from '../../src/runtime/core/storable.js';
import { isConnectionError, isTransientError } from '../../src/runtime/db/transient.js';
import { type Logger, rateLimitedWarnings } from '../../src/runtime/telemetry/log.js';
import { toJsonOutput } from '../../src/runtime/worker/outcome.js';
import { OutputCheck } from '../../src/runtime/worker/output-check.js';

describe('storable values', () => {
  it('escapes U+0000 and unpaired surrogates, and keeps valid pairs', () => {
    expect(storableText('a\u0000b')).toBe('a\\u0000b');
    expect(storableText('\ud800x\udfff')).toBe('\\ud800x\\udfff');
    expect(storableText('emoji \ud83d\ude00 ok')).toBe('emoji \ud83d\ude00 ok');
    expect(storableText('\\u0000 is already text')).toBe('\\u0000 is already text');
  });

  it('finds the first unstorable string by JSON pointer, in values and keys, without recursion', () => {
    expect(findUnstorable({ a: ['x', { 'b/c': 'y\u0000' }] })).toEqual({ pointer: '/a/1/b~1c', what: 'U+0000' });
    expect(findUnstorable({ ok: '\\u0000' })).toBeUndefined();
    expect(findUnstorable('\udc00')).toEqual({ pointer: '', what: 'an unpaired surrogate U+DC00' });
    let deep: unknown = 'bad\u0000';
    for (let i = 0; i < 5000; i++) deep = [deep];
    expect(findUnstorable(deep)?.what).toBe('U+0000');
  });

  it('a handler output: JSON or an error that says why', () => {
    expect(toJsonOutput({ a: 1 })).toEqual({ value: { a: 1 }, text: '{"a":1}', bytes: 7 });
    expect(toJsonOutput(undefined)).toEqual({ value: null, text: 'null', bytes: 4 });
    // a large output keeps its text only: it is stored as is, parsed again only where a check needs it
    const large = toJsonOutput({ a: 'é'.repeat(40_000) });
    expect(large).toMatchObject({ value: undefined, bytes: 80_008 });
    expect(JSON.parse(large.text).a).toHaveLength(40_000);
    expect(() => toJsonOutput({ n: 1n })).toThrow(/a BigInt is not JSON/);
    const trap = new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
        ownKeys: () => {
          throw new Error('keys');
        },
      },
    );
    expect(() => toJsonOutput({ p: trap })).toThrow(/the handler's output is not JSON: (trap|keys)/);
  });
});

describe('describing what a handler threw never throws', () => {
  it('gives a placeholder for values that throw when read', () => {
    const proxy = new Proxy(
      {},
      {
        get: () => {
          throw new Error('x');
        },
        getPrototypeOf: () => {
          throw new Error('x');
        },
      },
    );
    expect(describeError(proxy)).toEqual({ message: 'the handler threw a value that cannot be described (reading it threw)', kind: 'error' });
    expect(describeError(Object.create(null)).message).toBe('non-Error thrown: {}');
    expect(describeError(Symbol('s')).message).toBe('non-Error thrown: Symbol(s)');
    expect(describeError(undefined).message).toBe('non-Error thrown: undefined');
  });

  it('bounds and escapes the texts', () => {
    const e = describeError(new Error(`${'m'.repeat(5000)}\u0000`));
    expect(e.message.length).toBeLessThanOrEqual(2001);
    expect(describeError(new Error('\u0000')).message).toBe('\\u0000');
  });
});

describe('database errors: transient or for good', () => {
  it('classifies by SQLSTATE and socket codes', () => {
    const pg = (code: string) => Object.assign(new Error('x'), { code });
    expect(isTransientError(pg('57P01'))).toBe(true);
    expect(isTransientError(pg('08006'))).toBe(true);
    expect(isTransientError(pg('40P01'))).toBe(true);
    expect(isTransientError(pg('53300'))).toBe(true);
    expect(isTransientError(pg('22P05'))).toBe(false);
    expect(isTransientError(pg('23505'))).toBe(false);
    expect(isTransientError(pg('ECONNREFUSED'))).toBe(true);
    expect(isTransientError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isTransientError(new Error('Client was closed and is not queryable'))).toBe(false);
    expect(isTransientError(new TypeError('x is not a function'))).toBe(false);
    expect(isConnectionError(pg('57P01'))).toBe(true);
    expect(isConnectionError(pg('ECONNRESET'))).toBe(true);
    expect(isConnectionError(pg('40001'))).toBe(false);
    expect(isConnectionError(pg('22P05'))).toBe(false);
  });
});

describe('backoff and repeated warnings', () => {
  it('doubles from the initial delay to the cap, with jitter in the upper half', () => {
    const policy = { initialMs: 100, maxMs: 5000 };
    expect([1, 2, 3, 10].map((n) => backoffMs(n, policy, () => 1))).toEqual([100, 200, 400, 5000]);
    expect(backoffMs(1, policy, () => 0)).toBe(50);
  });

  it('writes an identical warning once per window, then says how many were left out', () => {
    const lines: string[] = [];
    const base: Logger = { info: () => undefined, taskDone: () => undefined, warn: (m) => lines.push(m) };
    let t = 0;
    const log = rateLimitedWarnings(base, 10_000, () => t);
    for (let i = 0; i < 1000; i++) log.warn('fetching tasks failed');
    log.warn('something else');
    t = 10_001;
    log.warn('fetching tasks failed');
    expect(lines).toEqual(['fetching tasks failed', 'something else', 'fetching tasks failed (and 999 more like it in the last 10 s)']);
  });
});

describe("checking a large output against its returns' patterns", () => {
  it('runs off the event loop: the loop keeps turning while a 1 MiB output is checked, and the check still finds the problem', async () => {
    const check = new OutputCheck();
    try {
      const schema = { type: 'object', properties: { text: { type: 'string', pattern: '^(a+)+$' } } };
      let turns = 0;
      const ticker = setInterval(() => turns++, 1);
      const problems = await check.problems(schema, { text: `${'a'.repeat(1 << 20)}!` });
      clearInterval(ticker);
      expect(problems.map((p) => p.pointer)).toEqual(['/text']);
      expect(turns).toBeGreaterThan(1);
      // a small output is checked in place, against the same schema
      expect(await check.problems(schema, { text: 'aaa' })).toEqual([]);
    } finally {
      await check.stop();
    }
  });
});
