import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { outputProblems } from '../../src/compiler/returns.js';
import { CompileError, compile, validate } from '../../src/index.js';
import { scanSignalTerm } from '../../src/runtime/waits/decide.js';

const field = fc.stringMatching(/^[a-z][a-z0-9_]{0,6}$/);

/** JSON-Schema-shaped values: mostly the keywords braid types, with arbitrary values where they go wrong. */
const schemaLike: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small' },
    fc.record(
      {
        type: fc.oneof(fc.constantFrom('object', 'string', 'number', 'integer', 'boolean', 'array', 'null', 'numbr'), fc.jsonValue()),
        properties: fc.dictionary(field, tie('schema'), { maxKeys: 3 }),
        required: fc.oneof(fc.array(field, { maxLength: 2 }), fc.jsonValue()),
        items: tie('schema'),
        enum: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue({ maxDepth: 2 }),
  ),
})).schema;

/** CEL over a dep's output or a signal row: right names, wrong names, noise. */
const read = fc
  .tuple(
    fc.constantFrom('deps["a"].output', 'deps.a.output', 'deps["a"].state', 'payload', 'payload.who', 'inputs', 'size(inputs.list)', 'a'),
    fc.array(
      fc.oneof(
        field.map((f) => `.${f}`),
        fc.constantFrom(' + 1', ' < 0.5', ' == "x"', '[0]', ' && true', ')'),
      ),
      { maxLength: 3 },
    ),
  )
  .map(([head, rest]) => head + rest.join(''));

describe('property: returns schemas and distinct expressions never crash validate, compile or the runtime', () => {
  it('validate and compile take any returns, any read of an output, any distinct and any count; a validated returns checks any output', () => {
    let checked = 0;
    fc.assert(
      fc.property(
        schemaLike,
        read,
        read,
        fc.oneof(
          fc.integer({ min: -2, max: 3 }),
          read.map((r) => `\${{ ${r} }}`),
          fc.string({ maxLength: 8 }),
        ),
        fc.jsonValue({ maxDepth: 3 }),
        fc.jsonValue({ maxDepth: 3 }),
        (returns, when, distinct, count, output, inputs) => {
          const definition = {
            name: 'p',
            inputs: { type: 'object', properties: { list: { type: 'array' } } },
            tasks: {
              a: { kind: 'a', returns },
              b: {
                kind: 'b',
                deps: ['a'],
                when,
                args: { x: `\${{ ${when} }}` },
                wait: { terms: { t: { signal: 'k', where: 'true', distinct, count } } },
              },
            },
          };
          const result = validate([{ path: 'p.yaml', content: stringify(definition) }]);
          for (const d of result.diagnostics) expect(d.line).toBeGreaterThanOrEqual(1);
          for (const def of result.definitions) {
            try {
              compile(def, inputs, { id: 'wf', now: '2026-01-01T00:00:00Z' });
            } catch (error) {
              expect(error).toBeInstanceOf(CompileError);
            }
          }
          // the schema alone: when it validates, any output is checked against it without throwing
          const alone = validate([{ path: 'q.yaml', content: stringify({ name: 'q', tasks: { a: { kind: 'a', returns } } }) }]);
          const schema = alone.definitions[0]?.normalized.tasks[0].returns;
          if (schema) {
            checked++;
            for (const p of outputProblems(schema, output)) expect(p.pointer.startsWith('/')).toBe(true);
          }
        },
      ),
      {
        numRuns: 120,
        // found by CI: the meta-schema's uniqueItems check threw on an object whose "toString" is not a function
        examples: [[{ items: { type: [{}, { toString: 0 }] } }, 'deps["a"].output', 'deps["a"].output', '', [], false]],
      },
    );
    // the generator makes valid schemas often enough for the output check to be exercised (about one run in
    // eight: 10 of 120 came up in CI, so the bar sits where chance does not reach it)
    expect(checked).toBeGreaterThan(5);
  });

  it('a distinct term counts any payloads without throwing: an expression that fails on a row is recorded, the row skipped', () => {
    fc.assert(
      fc.property(read, fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 8 }), fc.integer({ min: 1, max: 4 }), (distinct, payloads, count) => {
        const rows = payloads.map((payload, i) => ({
          id: String(i + 1),
          attempt: 1,
          key: 'k',
          payload,
          source: null,
          idempotency_key: null,
          created_at: new Date(0),
        }));
        const term = { name: 't', kind: 'signal' as const, signal: 'k', count, distinct };
        const progress = scanSignalTerm(term, { cursor: '0', matched: [] }, rows, { inputs: { list: [] } });
        expect(progress.matched.length).toBeLessThanOrEqual(count);
        expect(new Set(progress.distinct).size).toBe(progress.distinct?.length);
        expect(progress.distinct?.length).toBe(progress.matched.length);
      }),
      { numRuns: 300 },
    );
  });

  it('a term renamed from another key counts the signals of both keys, in id order, with its where and distinct', () => {
    const row = (id: number, key: string, by: string) => ({
      id: String(id),
      attempt: 1,
      key,
      payload: { by },
      source: null,
      idempotency_key: null,
      created_at: new Date(0),
    });
    const rows = [row(1, 'approval', 'ada'), row(2, 'other', 'eve'), row(3, 'approved', 'ada'), row(4, 'approved', 'bob')];
    const term = { name: 't', kind: 'signal' as const, signal: 'approved', renamed_from: 'approval', count: 2, distinct: 'payload.by' };
    expect(scanSignalTerm(term, { cursor: '0', matched: [] }, rows)).toMatchObject({ cursor: '4', matched: ['1', '4'] });
    const plain = { name: 't', kind: 'signal' as const, signal: 'approved', count: 2, distinct: 'payload.by' };
    expect(scanSignalTerm(plain, { cursor: '0', matched: [] }, rows)).toMatchObject({ matched: ['3', '4'] });
  });
});
