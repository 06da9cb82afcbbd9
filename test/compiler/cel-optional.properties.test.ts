import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CompileError, compile, validate } from '../../src/index.js';

/**
 * Rule cel-optional's promise: whatever the inputs schema and the expression, either validate says something,
 * or the expression never fails with "No such key" on inputs that satisfy the schema.
 */

interface Field {
  name: string;
  required: boolean;
  defaulted: boolean;
  /** A nested object's fields; a string leaf when undefined. */
  fields?: Field[];
}

const NAMES = ['a', 'b', 'c'];

const field = (depth: number): fc.Arbitrary<Field[]> =>
  fc.uniqueArray(
    fc.record({
      name: fc.constantFrom(...NAMES),
      required: fc.boolean(),
      defaulted: fc.boolean(),
      fields:
        depth > 0
          ? fc.option(
              fc.constant(null).chain(() => field(depth - 1)),
              { nil: undefined },
            )
          : fc.constant(undefined),
    }),
    { selector: (f) => f.name, minLength: 1, maxLength: 3 },
  );

function schemaOf(fields: Field[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const f of fields) {
    const leaf = f.fields === undefined;
    properties[f.name] = leaf
      ? { type: 'string', ...(f.defaulted ? { default: 'd' } : {}) }
      : { type: 'object', properties: schemaOf(f.fields!).properties, required: schemaOf(f.fields!).required };
  }
  return { type: 'object', properties, required: fields.filter((f) => f.required).map((f) => f.name) };
}

/** Inputs the schema accepts: required fields always, the others sometimes. */
function inputsOf(fields: Field[]): fc.Arbitrary<Record<string, unknown>> {
  const entries = fields.map((f) => {
    const value: fc.Arbitrary<unknown> = f.fields === undefined ? fc.string({ maxLength: 3 }) : inputsOf(f.fields);
    return f.required ? value.map((v) => [[f.name, v]]) : fc.option(value, { nil: undefined }).map((v) => (v === undefined ? [] : [[f.name, v]]));
  });
  return fc.tuple(...entries).map((parts) => Object.fromEntries(parts.flat() as [string, unknown][]));
}

/** Paths to string leaves (and to objects, for has()), with names that may not exist one level down. */
function paths(fields: Field[], prefix: string): { leaves: string[]; all: string[] } {
  const leaves: string[] = [];
  const all: string[] = [];
  for (const f of fields) {
    const p = `${prefix}.${f.name}`;
    all.push(p);
    if (f.fields === undefined) leaves.push(p);
    else {
      const inner = paths(f.fields, p);
      leaves.push(...inner.leaves);
      all.push(...inner.all);
    }
  }
  return { leaves, all };
}

function optionalForm(path: string): string {
  const [root, ...rest] = path.split('.');
  return `${root}.${rest.map((k) => `?${k}`).join('.')}.orValue("")`;
}

/** Boolean CEL over the paths: reads, has() tests, optional selects, combined with &&, ||, ! and conditionals. */
function expression(leaves: string[], all: string[]): fc.Arbitrary<string> {
  const atom = fc.oneof(
    fc.constantFrom(...leaves).map((p) => `${p} != "z"`),
    fc.constantFrom(...all).map((p) => `has(${p})`),
    fc.constantFrom(...leaves).map((p) => `${optionalForm(p)} != "z"`),
  );
  const { tree } = fc.letrec<{ tree: string }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      atom,
      fc.tuple(tie('tree'), tie('tree')).map(([a, b]) => `(${a} && ${b})`),
      fc.tuple(tie('tree'), tie('tree')).map(([a, b]) => `(${a} || ${b})`),
      tie('tree').map((a) => `!(${a})`),
      fc.tuple(tie('tree'), tie('tree'), tie('tree')).map(([c, a, b]) => `(${c} ? ${a} : ${b})`),
    ),
  }));
  return tree;
}

const scenario = field(2).chain((fields) => {
  const { leaves, all } = paths(fields, 'inputs');
  return fc.record({
    fields: fc.constant(fields),
    when: expression(leaves.length > 0 ? leaves : all, all),
    lone: fc.constantFrom(...(leaves.length > 0 ? leaves : all)),
    inputs: fc.array(inputsOf(fields), { minLength: 1, maxLength: 4 }),
  });
});

describe('cel-optional: property', () => {
  it('any schema and expression: a diagnostic at validate, or no "No such key" at run time on inputs the schema accepts', () => {
    let clean = 0;
    let flagged = 0;
    fc.assert(
      fc.property(scenario, ({ fields, when, lone, inputs }) => {
        const definition = {
          name: 'opt',
          inputs: schemaOf(fields),
          tasks: { t: { kind: 'k', args: { cond: `\${{ ${when} }}`, lone: `\${{ ${lone} }}`, text: `x \${{ ${when} }}` } } },
        };
        const result = validate([{ path: 'opt.yaml', content: stringify(definition) }]);
        const errors = result.diagnostics.filter((d) => d.severity === 'error');
        expect(errors.filter((d) => d.rule !== 'cel-optional')).toEqual([]);
        if (errors.length > 0) {
          flagged++;
          return;
        }
        clean++;
        for (const given of inputs) {
          try {
            const plan = compile(result.definitions[0], given, { id: 'wf', now: '2026-01-01T00:00:00Z' });
            const args = plan.tasks[0].args as Record<string, unknown>;
            expect(typeof args.cond).toBe('boolean');
          } catch (error) {
            expect(error).toBeInstanceOf(CompileError);
            throw new Error(`validated, then failed on ${JSON.stringify(given)}: ${(error as CompileError).message}`);
          }
        }
      }),
      { numRuns: 400 },
    );
    // both sides of the rule are exercised
    expect(clean).toBeGreaterThan(40);
    expect(flagged).toBeGreaterThan(40);
  });

  it('a lone optional reference in args is left out when absent, and kept when present', () => {
    const definition = {
      name: 'lone',
      inputs: { type: 'object', properties: { reason: { type: 'string' }, customer: { type: 'object', properties: { email: { type: 'string' } } } } },
      tasks: { t: { kind: 'k', args: { why: '${{ inputs.reason }}', email: '${{ inputs.customer.email }}', fixed: 1 } } },
    };
    const result = validate([{ path: 'lone.yaml', content: stringify(definition) }]);
    expect(result.diagnostics).toEqual([]);
    const args = (given: unknown) => compile(result.definitions[0], given, { id: 'wf', now: '2026-01-01T00:00:00Z' }).tasks[0].args;
    expect(args({})).toEqual({ fixed: 1 });
    expect(args({ customer: {} })).toEqual({ fixed: 1 });
    expect(args({ reason: 'late', customer: { email: 'e@x' } })).toEqual({ why: 'late', email: 'e@x', fixed: 1 });
  });
});
