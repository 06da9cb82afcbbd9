import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { RULES, validate } from '../../src/index.js';

const annotation = fc.oneof(
  { arbitrary: fc.constant(true), weight: 6 },
  { arbitrary: fc.constant(false), weight: 2 },
  { arbitrary: fc.constantFrom('yes', 1, null, [], {}, { sensitive: true }), weight: 1 },
);
/** A JSON Schema with `sensitive` anywhere: on properties, items, the root, inside combinators, or as data. */
const schema: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ type: fc.constantFrom('string', 'integer', 'boolean'), sensitive: annotation }, { requiredKeys: ['type'] }),
    fc.record(
      {
        type: fc.constant('object'),
        properties: fc.dictionary(fc.constantFrom('card', 'pan', 'name', 'n'), tie('node'), { maxKeys: 3 }),
        required: fc.constantFrom([], ['card'], ['pan', 'n']),
        sensitive: annotation,
      },
      { requiredKeys: ['type'] },
    ),
    fc.record({ type: fc.constant('array'), items: tie('node'), sensitive: annotation }, { requiredKeys: ['type', 'items'] }),
    fc.record({ anyOf: fc.array(tie('node'), { minLength: 1, maxLength: 2 }), sensitive: annotation }, { requiredKeys: ['anyOf'] }),
    fc.record({ enum: fc.constant([{ sensitive: 'data, not a schema' }]) }),
  ),
})).node;
const key = fc.constantFrom('inputs.card', 'inputs.card.pan', 'inputs.n', 'string(inputs)', 'inputs.pan[0]', '"k"', 'inputs.?card.orValue("x")', '((');

describe('sensitive data: property tests', () => {
  it('any schema with sensitive anywhere, read by any key, validates to diagnostics of known rules at real positions, never a crash', () => {
    fc.assert(
      fc.property(schema, schema, key, key, (inputs, returns, flowKey, itemKey) => {
        const definition = {
          name: 'p',
          inputs,
          concurrency: { key: flowKey, limit: 1 },
          tasks: {
            a: { kind: 'x', returns },
            b: { kind: 'y', deps: ['a'], for_each: '${{ [1, 2] }}', key: `\${{ ${itemKey} }}` },
          },
        };
        const result = validate([{ path: 'p.yaml', content: stringify(definition) }]);
        for (const d of result.diagnostics) {
          expect(RULES).toContain(d.rule);
          expect(d.line).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a key reading a sensitive value is refused, one not reading one is not', () => {
    const inputs = {
      type: 'object',
      required: ['card', 'id'],
      properties: { id: { type: 'string' }, card: { type: 'object', required: ['pan'], properties: { pan: { type: 'string', sensitive: true } } } },
    };
    const leaks = (flowKey: string) =>
      validate([{ path: 'p.yaml', content: stringify({ name: 'p', inputs, concurrency: { key: flowKey, limit: 1 }, tasks: { a: { kind: 'x' } } }) }])
        .diagnostics.filter((d) => d.rule === 'sensitive-leak')
        .map((d) => d.message);
    expect(leaks('inputs.card.pan')).toEqual(['this key reads inputs.card.pan, which is sensitive: a key is stored and shown in clear']);
    expect(leaks('inputs.id + inputs.card.pan.substring(0, 4)')).toHaveLength(1);
    expect(leaks('inputs.id')).toEqual([]);
  });

  it('values written into inputs: any schemas and templates on both sides validate to known rules, never a crash', () => {
    const value = fc.constantFrom('${{ inputs.card }}', '${{ inputs.card.pan }}', 'x ${{ string(inputs) }}', 'literal', 7, '${{ deps.a.output }}', '${{ ((');
    fc.assert(
      fc.property(schema, schema, schema, fc.dictionary(fc.constantFrom('card', 'pan', 'n'), value, { maxKeys: 3 }), (inputs, returns, child, written) => {
        const parent = { name: 'p', inputs, tasks: { a: { kind: 'x', returns }, b: { deps: ['a'], start: { workflow: 'c', inputs: written } } } };
        const result = validate([
          { path: 'p.yaml', content: stringify({ ...parent, on_failure: { start: { workflow: 'c', inputs: written } } }) },
          {
            path: 'c.yaml',
            content: stringify({ name: 'c', inputs: child, schedules: [{ name: 's', every: '1h', inputs: written }], tasks: { w: { kind: 'w' } } }),
          },
        ]);
        for (const d of result.diagnostics) {
          expect(RULES).toContain(d.rule);
          expect(d.line).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("an event's sensitive field written into an input not marked sensitive is refused; into a sensitive one it is not", () => {
    const events = { 'card.added': { schema: { type: 'object', properties: { card: { type: 'string', sensitive: true }, id: { type: 'string' } } } } };
    const leaks = (token: unknown) =>
      validate(
        [
          {
            path: 'p.yaml',
            content: stringify({
              name: 'p',
              inputs: { type: 'object', properties: { token: token, id: { type: 'string' } } },
              triggers: [{ event: 'card.added', inputs: { token: '${{ event.payload.card }}', id: '${{ event.payload.id }}' } }],
              tasks: { a: { kind: 'x' } },
            }),
          },
        ],
        { events },
      ).diagnostics.filter((d) => d.rule === 'sensitive-leak');
    expect(leaks({ type: 'string' }).map((d) => [d.line, d.message])).toEqual([
      [
        expect.any(Number),
        'input token of "p" is given event.payload.card, which is sensitive, and is not marked sensitive itself: it would be stored in clear',
      ],
    ]);
    expect(leaks({ type: 'string', sensitive: true })).toEqual([]);
  });
});
