import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from '../../src/compiler/instantiate.js';
import type { NormalizedDefinition } from '../../src/compiler/normalize.js';
import { stampable } from '../../src/compiler/stamp.js';
import { validate, type WorkflowDefinition } from '../../src/compiler/validate.js';
import { repoRoot } from '../helpers/cli.js';

/** The examples' definitions, and one written to be stampable while touching each task field. */
function corpus(): WorkflowDefinition[] {
  const dir = join(repoRoot, 'definitions');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && !f.endsWith('.test.yaml'));
  const sources = [
    ...files.map((f) => ({ path: join(dir, f), content: readFileSync(join(dir, f), 'utf8') })),
    { path: 'stamped.yaml', content: readFileSync(join(repoRoot, 'test/fixtures/stamped.yaml'), 'utf8') },
  ];
  return validate(sources).definitions;
}

function examplesOf(def: NormalizedDefinition): unknown[] {
  const examples = (def.inputs as { examples?: unknown[] } | undefined)?.examples;
  return examples && examples.length > 0 ? examples : [{}];
}

describe('stampable: a batch start may stamp one compiled row for the others', () => {
  const definitions = corpus();

  it('a stampable definition compiles to the same tasks whatever its inputs and id; the others differ by some inputs', () => {
    const now = new Date('2030-05-01T00:00:00Z');
    const seen = { stampable: 0, templated: 0 };
    for (const def of definitions) {
      const plans = examplesOf(def.normalized).map((inputs, i) => compile(def.normalized, inputs, { id: `w-${i}`, now }));
      if (stampable(def.normalized)) {
        seen.stampable++;
        for (const p of plans) expect(p.tasks, def.normalized.name).toEqual(plans[0].tasks);
      } else seen.templated++;
    }
    // neither side empty: the test says something about both
    expect(seen.stampable).toBeGreaterThanOrEqual(1);
    expect(seen.templated).toBeGreaterThanOrEqual(5);
  });

  it('a template anywhere in a task, flow control or a workflow concurrency makes a definition not stampable', () => {
    const rich = definitions.find((d) => d.normalized.name === 'stamped')!.normalized;
    expect(stampable(rich)).toBe(true);
    fc.assert(
      fc.property(fc.nat({ max: rich.tasks.length - 1 }), fc.jsonValue({ maxDepth: 4 }), fc.boolean(), (at, value, nest) => {
        const template = '${{ inputs.n }}';
        const placed = nest ? { deep: [value, { there: template }] } : `n is ${template}`;
        const tasks = rich.tasks.map((t, i) => (i === at ? { ...t, args: { ...(t.args as object), placed } } : t));
        expect(stampable({ ...rich, tasks })).toBe(false);
        // the same value without a template keeps it stampable
        expect(stampable({ ...rich, tasks: rich.tasks.map((t, i) => (i === at ? { ...t, metadata: { value } } : t)) })).toBe(
          !JSON.stringify(value).includes('${{'),
        );
      }),
    );
    const flow = { ...rich, tasks: rich.tasks.map((t, i) => (i === 0 ? { ...t, flow: { concurrency: { key: 'inputs.s', limit: 2 } } } : t)) };
    expect(stampable(flow as NormalizedDefinition)).toBe(false);
    expect(stampable({ ...rich, concurrency: { key: 'inputs.s', limit: 2 } } as NormalizedDefinition)).toBe(false);
  });
});
