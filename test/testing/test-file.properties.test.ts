import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { validate } from '../../src/compiler/validate.js';
import { checkTestFile } from '../../src/testing/checks.js';
import { loadTestFile } from '../../src/testing/test-file.js';

const signup = validate([
  {
    path: 'signup.yaml',
    content: `name: signup
tasks:
  welcome: { kind: send_email }
  verify: { kind: record, deps: [welcome], wait: { terms: { verified: { signal: email_verified } } } }
`,
  },
]).definitions[0];
const definitions = new Map([[signup.name, signup.normalized]]);

/** A test file's pieces, right and wrong, so schema errors, unknown names and valid files all occur. */
const mock = fc.oneof(
  fc.record({ output: fc.jsonValue() }),
  fc.record({ error: fc.string() }),
  fc.record({ fail: fc.integer({ min: -1, max: 4 }), output: fc.jsonValue() }),
  fc.record({ delay: fc.constantFrom('1h', '2x', '') }),
  fc.record({ handler: fc.constantFrom('real', 'fake') }),
  fc.jsonValue(),
);
const step = fc.oneof(
  fc.record({ advance: fc.constantFrom('1d', '30m', 'soon', 5) }),
  fc.record({ signal: fc.record({ key: fc.constantFrom('email_verified', 'typo', ''), payload: fc.jsonValue() }) }),
  fc.record({
    expect: fc.record(
      {
        state: fc.constantFrom('completed', 'done'),
        tasks: fc.dictionary(fc.constantFrom('welcome', 'verify', 'nope', 'verify[1]'), fc.constantFrom('completed', 'skipped', 'bogus')),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ cancel: fc.constantFrom(true, false) }),
  fc.record({ retry: fc.oneof(fc.constant(true), fc.record({ mode: fc.constantFrom('all', 'failed-only', 'sideways') })) }),
  fc.jsonValue(),
);
const testCase = fc.record(
  {
    name: fc.string(),
    inputs: fc.jsonValue(),
    mocks: fc.dictionary(fc.constantFrom('welcome', 'kind:send_email', 'kind:nope', 'other.task', 'Bad Key'), mock),
    steps: fc.array(step, { maxLength: 4 }),
    expect: fc.jsonValue(),
  },
  { requiredKeys: [] },
);
const file = fc.record(
  { workflow: fc.constantFrom('signup', 'nope', ''), now: fc.constantFrom('2026-01-01T00:00:00Z', 'yesterday'), tests: fc.array(testCase, { maxLength: 3 }) },
  { requiredKeys: [] },
);

describe('workflow test files: whatever the input, diagnostics and never a throw', () => {
  it('structured test files, right and wrong', () => {
    fc.assert(
      fc.property(file, (value) => {
        const loaded = loadTestFile({ path: 'x.test.yaml', content: stringify(value) });
        if (loaded.value) checkTestFile(loaded.value, definitions, loaded.reporter);
        for (const d of loaded.reporter.diagnostics) {
          expect(d.line).toBeGreaterThanOrEqual(1);
          expect(d.rule).toMatch(/^(test-|yaml-|duplicate-key|input-limit)/);
        }
        // a model only for a file the schema accepted
        if (loaded.file) expect(loaded.value).toBeDefined();
      }),
      { numRuns: 300 },
    );
  });

  it('garbage, empty, deep and huge input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const loaded = loadTestFile({ path: 'x.test.yaml', content: text });
        expect(Array.isArray(loaded.diagnostics)).toBe(true);
      }),
      { numRuns: 300 },
    );
    expect(loadTestFile({ path: 'x.test.yaml', content: '' }).diagnostics.map((d) => d.rule)).toEqual(['test-schema']);
    expect(loadTestFile({ path: 'x.test.yaml', content: `${'['.repeat(10_000)}${']'.repeat(10_000)}` }).diagnostics.map((d) => d.rule)).toContain(
      'input-limit',
    );
    expect(
      loadTestFile({ path: 'x.test.yaml', content: `workflow: signup\ntests: [${Array.from({ length: 20_000 }, (_, i) => `{ name: t${i} }`).join(', ')}]` })
        .diagnostics,
    ).toEqual([]);
  });
});
