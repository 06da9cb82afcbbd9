/**
 * JSON Schema patterns on a linear-time engine (re2js, a pure-JS RE2): a user's `pattern` can never make a
 * match take exponential time, whatever the string (`^(a+)+$` against 100,000 characters takes tens of ms,
 * where the backtracking engine takes minutes). re2js over re2-wasm (measured): no WebAssembly to load (66 ms)
 * or free, compiles `\p{L}` in 1 ms where re2-wasm took 147, and is about as fast on the strings schemas check.
 * Backreferences and lookaround have no linear-time form: a pattern using them is refused at validate.
 */
import { createRequire } from 'node:module';
import type { RegExpEngine } from 'ajv/dist/types/index.js';

type Re2 = { matcher(input: string): { find(): boolean } };
type Re2Module = { RE2JS: { compile(pattern: string): Re2 } };

// about 70 ms to load: required when a first user schema is compiled
const require = createRequire(import.meta.url);
let re2: Re2Module['RE2JS'] | undefined;

/**
 * ECMA-262 escapes RE2 spells differently: `\uXXXX` and `\u{X}` become `\x{X}` (an escaped backslash before
 * them is kept as it is).
 */
function toRe2Syntax(pattern: string): string {
  return pattern.replace(/\\(\\|u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4}))/g, (whole, _c: string, braced?: string, four?: string) =>
    braced !== undefined || four !== undefined ? `\\x{${braced ?? four}}` : whole,
  );
}

/** A pattern compiled for the linear-time engine; throws an Error saying why it cannot be. */
export function compileLinear(pattern: string): Re2 {
  re2 ??= (require('re2js') as Re2Module).RE2JS;
  try {
    return re2.compile(toRe2Syntax(pattern));
  } catch (error) {
    const why = String((error as Error).message ?? error).replace(/^error parsing regexp: /, '');
    throw new Error(`pattern ${JSON.stringify(pattern)} cannot run in linear time: ${why}`);
  }
}

/** ajv's `code.regExp`: every `pattern` and `patternProperties` of a user schema runs on the linear-time engine. */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    const re = compileLinear(pattern);
    // ajv keys the compiled patterns of a validator by their text: each must have its own
    return { test: (s: string) => re.matcher(s).find(), toString: () => `/${pattern}/${flags}` };
  },
  { code: 'braid:linear-regexp' },
);
