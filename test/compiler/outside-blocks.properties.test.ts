import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { planSchemaValidator } from '../../src/compiler/schemas.js';
import { triggerOutcomes } from '../../src/compiler/triggers.js';
import { CompileError, compile, RULES, validate } from '../../src/index.js';

const anyValue = fc.oneof(
  fc.string({ maxLength: 10 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 4 })), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
);
const template = fc.constantFrom('${{ inputs.people }}', '${{ inputs.n }}', '${{ [inputs.n] }}', '${{ ((', '${{ inputs.nope }}', '${{ ["a", "a"] }}');
/** Mostly a value the field takes, sometimes anything at all. */
const mostly = <T>(valid: fc.Arbitrary<T>) => fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: anyValue, weight: 1 });
/** Absent more often than not. */
const sometimes = <T>(a: fc.Arbitrary<T>, weight = 1) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: a, weight });
const schema = mostly(
  fc.constantFrom(
    {},
    { type: 'object' },
    { type: 'objekt' },
    { properties: { d: { enum: ['yes', 'no'] } }, required: ['d'] },
    { type: 'string', pattern: '(' },
  ),
);
const callback = mostly(
  fc
    .record(
      {
        schema,
        expires: mostly(fc.constantFrom('1s', '0s', '2d', '100000000d', 'soon')),
        single_use: sometimes(mostly(fc.boolean())),
        recipients: sometimes(mostly(fc.oneof(template, fc.array(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 })))),
      },
      { requiredKeys: ['schema', 'expires'] },
    )
    .map((c) => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined))),
);
const term = fc
  .record({
    callback,
    count: sometimes(mostly(fc.oneof(fc.integer({ min: -1, max: 5 }), template))),
    where: sometimes(mostly(fc.constantFrom('payload.d == "yes"', 'source.recipient != ""', '(('))),
    distinct: sometimes(mostly(fc.constantFrom('source.recipient', 'payload'))),
    signal: fc.oneof({ arbitrary: fc.constant(undefined), weight: 12 }, { arbitrary: fc.constantFrom('callback:x.y', 'ok'), weight: 1 }),
  })
  .map((t) => Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined)));
const inputs = { type: 'object', properties: { people: { type: 'array', items: { type: 'string' } }, n: { type: 'integer' } } };

describe('callback terms: property tests', () => {
  it('any callback block validates to diagnostics of known rules at real positions, never a crash; what validates compiles to a valid plan or says why', () => {
    let compiled = 0;
    fc.assert(
      fc.property(term, fc.record({ people: fc.array(fc.string({ maxLength: 300 }), { maxLength: 5 }), n: fc.integer({ min: -3, max: 3 }) }), (t, start) => {
        const definition = { name: 'p', inputs, tasks: { a: { kind: 'x', wait: { terms: { t } } } } };
        const result = validate([{ path: 'p.yaml', content: stringify(definition) }]);
        for (const d of result.diagnostics) {
          expect(RULES).toContain(d.rule);
          expect(d.line).toBeGreaterThanOrEqual(1);
        }
        if (result.errors > 0) return;
        try {
          const plan = compile(result.definitions[0], start, { id: 'w', now: '2027-01-01T00:00:00Z' });
          const check = planSchemaValidator();
          expect(check(plan), JSON.stringify(check.errors)).toBe(true);
          compiled++;
          const planned = plan.tasks[0].wait!.terms[0];
          expect(planned.kind).toBe('signal');
          if (planned.kind === 'signal') expect(planned.callback!.expires_ms).toBeGreaterThan(0);
        } catch (error) {
          expect(error).toBeInstanceOf(CompileError);
          expect((error as CompileError).diagnostics.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 300 },
    );
    // the arbitraries reach the plan, not only the diagnostics
    expect(compiled).toBeGreaterThan(5);
  });
});

const cel = fc.oneof(
  fc.constantFrom(
    'event.payload.n > 1',
    'event.payload.who',
    'event.name',
    '"k-" + event.id',
    'event.payload.nope',
    '((',
    'event.payload.n',
    'true',
    '${{ event.id }}',
  ),
  fc.string({ maxLength: 8 }),
);
const trigger = fc
  .record({
    event: mostly(fc.constantFrom('thing.done', 'thing.undeclared', 'bad name')),
    where: sometimes(mostly(cel)),
    id: sometimes(mostly(cel)),
    inputs: sometimes(
      mostly(
        fc.dictionary(fc.constantFrom('n', 'who', 'x'), fc.oneof(fc.constantFrom('${{ event.payload.n }}', '${{ event.payload.who }}', '${{ (('), anyValue)),
      ),
    ),
    extra: fc.oneof({ arbitrary: fc.constant(undefined), weight: 12 }, { arbitrary: anyValue, weight: 1 }),
  })
  .map((t) => Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined)));
const events = { 'thing.done': { schema: { type: 'object', properties: { n: { type: 'integer' }, who: { type: 'string' } } } } };

describe('triggers: property tests', () => {
  it('any triggers block validates to diagnostics, never a crash; what validates evaluates any payload to outcomes, never a throw', () => {
    let evaluated = 0;
    fc.assert(
      fc.property(fc.oneof(fc.array(trigger, { maxLength: 3 }), anyValue), anyValue, fc.string({ maxLength: 12 }), (triggers, payload, id) => {
        const definition = {
          name: 'p',
          inputs: { type: 'object', properties: { n: { type: 'integer' }, who: { type: 'string' } } },
          triggers,
          tasks: { a: { kind: 'x' } },
        };
        const result = validate([{ path: 'p.yaml', content: stringify(definition) }], { events });
        for (const d of result.diagnostics) expect(RULES).toContain(d.rule);
        if (result.errors > 0) return;
        const outcomes = triggerOutcomes(result.definitions[0].normalized, { id, name: 'thing.done', time: new Date(0), payload });
        evaluated++;
        for (const o of outcomes) if (o.matched && !('error' in o)) expect(o.id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/);
      }),
      { numRuns: 300 },
    );
    expect(evaluated).toBeGreaterThan(5);
  });
});

const streams = mostly(
  fc.dictionary(
    fc.oneof(fc.constantFrom('tokens', 'text', 'Bad-Name'), fc.string({ maxLength: 6 })),
    mostly(fc.record({ schema: schema }, { requiredKeys: [] })),
    { maxKeys: 3 },
  ),
);

describe('streams: property tests', () => {
  it('any streams block validates to diagnostics of known rules, never a crash; what validates keeps its streams in the normalized task', () => {
    let kept = 0;
    fc.assert(
      fc.property(streams, fc.boolean(), (s, starts) => {
        const task = starts ? { start: { workflow: 'p' }, streams: s } : { kind: 'x', streams: s };
        const result = validate([{ path: 'p.yaml', content: stringify({ name: 'p', tasks: { a: task } }) }]);
        for (const d of result.diagnostics) expect(RULES).toContain(d.rule);
        if (result.errors > 0) return;
        expect(result.definitions[0].normalized.tasks[0].streams).toEqual(s);
        kept++;
      }),
      { numRuns: 300 },
    );
    expect(kept).toBeGreaterThan(5);
  });
});
