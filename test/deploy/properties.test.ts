import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CompileError } from '../../src/compiler/compile-error.js';
import { RULES } from '../../src/compiler/diagnostics.js';
import { compile } from '../../src/compiler/instantiate.js';
import type { Plan } from '../../src/compiler/plan.js';
import { validate, type WorkflowDefinition } from '../../src/compiler/validate.js';
import { diffDefinitions } from '../../src/deploy/diff.js';
import { inputsNarrowings } from '../../src/deploy/inputs-compat.js';
import { planDeploy } from '../../src/deploy/plan.js';
import { planMove } from '../../src/runtime/engine/move.js';

const name = fc.constantFrom('a', 'b', 'c', 'd', 'settle', 'review');
const kind = fc.constantFrom('k1', 'k2', 'k3');
const objectSchema = fc.record({
  type: fc.constantFrom('object'),
  required: fc.subarray(['x', 'y', 'z']),
  properties: fc.dictionary(
    fc.constantFrom('x', 'y', 'z'),
    fc.record(
      { type: fc.constantFrom('string', 'number', 'integer', 'array'), default: fc.option(fc.constant(1), { nil: undefined }) },
      { requiredKeys: ['type'] },
    ),
  ),
});
const schema = fc.oneof(fc.jsonValue(), objectSchema);

/** A version of one workflow: a few tasks, deps on earlier ones, waits on keys, renames, inputs. */
const version = fc.record({
  inputs: fc.option(objectSchema, { nil: undefined }),
  tasks: fc.array(
    fc.record({
      name,
      kind,
      renamed_from: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: name, weight: 1 }),
      args: fc.option(
        fc.dictionary(
          fc.constantFrom('id', 'n'),
          fc.constantFrom<unknown>(1, 'x', true, null, [1, 'y'], { a: 1 }, '${{ workflow.id }}', 'id ${{ workflow.id }}'),
        ),
        { nil: undefined },
      ),
      signal: fc.option(fc.constantFrom('go', 'stop', 'review'), { nil: undefined }),
      dep: fc.boolean(),
    }),
    { minLength: 1, maxLength: 5 },
  ),
});

type Version = typeof version extends fc.Arbitrary<infer T> ? T : never;

function definition(v: Version): WorkflowDefinition | undefined {
  const tasks: Record<string, unknown> = {};
  const names: string[] = [];
  for (const t of v.tasks) {
    if (names.includes(t.name)) continue;
    tasks[t.name] = {
      kind: t.kind,
      ...(t.renamed_from !== undefined ? { renamed_from: t.renamed_from } : {}),
      ...(t.args !== undefined ? { args: t.args } : {}),
      ...(t.signal !== undefined ? { wait: { terms: { s: { signal: t.signal } } } } : {}),
      ...(t.dep && names.length > 0 ? { deps: [names[names.length - 1]] } : {}),
    };
    names.push(t.name);
  }
  const result = validate([{ path: 'w.json', content: JSON.stringify({ name: 'w', ...(v.inputs !== undefined ? { inputs: v.inputs } : {}), tasks }) }]);
  return result.definitions[0];
}

const STATES = ['pending', 'available', 'scheduled', 'running', 'retryable', 'completed', 'cancelled', 'discarded', 'skipped'];

describe('deploy properties (fast-check)', () => {
  it('inputsNarrowings never throws on any JSON, and a schema never narrows itself', () => {
    fc.assert(
      fc.property(schema, schema, (a, b) => {
        inputsNarrowings(a, b);
        expect(inputsNarrowings(a, a)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('between any two versions: the diff, the plan and the move decision never throw; a version has no change to itself; findings are located rules', () => {
    let pairs = 0;
    let moves = 0;
    fc.assert(
      // rows are mostly not started, so many pairs can move at all
      fc.property(
        version,
        version,
        fc.array(
          fc.oneof({ arbitrary: fc.constantFrom('pending', 'available', 'scheduled'), weight: 3 }, { arbitrary: fc.constantFrom(...STATES), weight: 1 }),
          { minLength: 5, maxLength: 5 },
        ),
        (x, y, states) => {
          const from = definition(x);
          const to = definition(y);
          if (!from || !to) return;
          pairs++;
          expect(diffDefinitions(from.normalized, from.normalized)).toEqual([]);
          const changes = diffDefinitions(from.normalized, to.normalized);
          if (from.hash !== to.hash) expect(changes.length).toBeGreaterThan(0);
          const plan = planDeploy({
            validation: validate([{ path: 'w.json', content: to.source.text }]),
            baseline: [{ name: 'w', hash: from.hash, current: true, running: 2, normalized: from.normalized, kinds: { k1: 1 }, keys: { go: 2 } }],
            handlers: { file: 'h.mjs', kinds: new Set(['k2']) },
            against: { kind: 'db' },
            includeAbsent: true,
          });
          for (const d of plan.diagnostics) {
            expect(RULES).toContain(d.rule);
            expect(d.line).toBeGreaterThanOrEqual(1);
            expect(d.column).toBeGreaterThanOrEqual(1);
          }
          let tasks: Plan['tasks'];
          try {
            tasks = compile(to, {}, { id: 'w1', now: '2026-01-01T00:00:00Z' }).tasks;
          } catch (error) {
            if (error instanceof CompileError) return;
            throw error;
          }
          const rows = from.normalized.tasks.map((t, i) => ({ name: t.name, template: t.name, kind: t.kind, state: states[i % states.length] }));
          const decision = planMove(rows, tasks, to.normalized, from.normalized);
          if (decision.ok) {
            moves++;
            const { kept, redefined, inserted, deleted, renames, history, cancelled } = decision.plan;
            // every target task is accounted for once, and every row either becomes one, stays as history or goes
            expect([...kept, ...redefined, ...inserted].sort()).toEqual(tasks.map((t) => t.name).sort());
            expect(kept.length + redefined.length + deleted.length + history.length + cancelled.length).toBe(rows.length);
            for (const r of renames) expect(rows.some((row) => row.name === r.from)).toBe(true);
          } else expect(decision.reason.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 300 },
    );
    // the generator makes valid versions often enough for the property to mean something
    expect(pairs).toBeGreaterThan(60);
    expect(moves).toBeGreaterThan(5);
  });
});
