import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CompileError, compile, RULES, validate } from '../../src/index.js';

const anyValue = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }));
const cel = fc.oneof(
  fc.constantFrom(
    'inputs.tenant',
    'inputs.n',
    'inputs.tenantt',
    'workflow.id',
    '"stripe"',
    'args.who',
    '[inputs.tenant]',
    'inputs.n + 1',
    'inputs.n > 2 ? 3 : 1',
    '((',
  ),
  fc.string({ maxLength: 12 }),
);
const count = fc.oneof(fc.integer({ min: -2, max: 5 }), cel, anyValue);
const duration = fc.oneof(fc.constantFrom('1s', '0ms', '250ms', '1h', 'soon'), anyValue);
const flow = fc.record(
  {
    concurrency: fc.oneof(fc.record({ key: cel, limit: count }, { requiredKeys: [] }), anyValue),
    fairness: fc.oneof(fc.record({ key: cel, weight: count }, { requiredKeys: [] }), anyValue),
    rate_limit: fc.oneof(fc.record({ key: cel, limit: count, per: duration }, { requiredKeys: [] }), anyValue),
  },
  { requiredKeys: [] },
);
const inputs = { type: 'object', properties: { tenant: { type: 'string' }, n: { type: 'integer' } } };

describe('flow control: property tests', () => {
  it('any flow control validates to diagnostics of known rules at real positions, never a crash; what validates compiles or says why', () => {
    fc.assert(
      fc.property(
        flow,
        flow,
        fc.oneof(fc.record({ key: cel, quiet: duration }, { requiredKeys: [] }), fc.constant(undefined)),
        fc.record({ tenant: fc.oneof(fc.string({ maxLength: 300 }), fc.constant('t-7')), n: fc.integer({ min: -3, max: 3 }) }),
        (task, top, debounce, start) => {
          const definition = { name: 'p', inputs, ...top, ...(debounce ? { debounce } : {}), tasks: { a: { kind: 'x', args: { who: 'w' }, ...task } } };
          const result = validate([{ path: 'p.yaml', content: stringify(definition) }]);
          for (const d of result.diagnostics) {
            expect(RULES).toContain(d.rule);
            expect(d.line).toBeGreaterThanOrEqual(1);
            expect(d.column).toBeGreaterThanOrEqual(1);
          }
          if (result.errors > 0) return;
          try {
            const plan = compile(result.definitions[0], start, { id: 'w', now: '2027-01-01T00:00:00Z' });
            const f = plan.tasks[0].flow;
            for (const c of [f?.concurrency, f?.workflow_concurrency]) if (c) expect(c.limit).toBeGreaterThanOrEqual(1);
            if (f?.fairness) expect(f.fairness.weight).toBeGreaterThanOrEqual(1);
            for (const k of [f?.concurrency?.key, f?.fairness?.key, f?.rate_limit?.key]) if (k !== undefined) expect(k.length).toBeLessThanOrEqual(256);
          } catch (error) {
            expect(error).toBeInstanceOf(CompileError);
            expect((error as CompileError).diagnostics.length).toBeGreaterThan(0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
