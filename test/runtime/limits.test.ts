import { describe, expect, it } from 'vitest';
import { CompileError } from '../../src/compiler/compile-error.js';
import { patient } from '../helpers/patience.js';
import { backend, drivenRuntime, final, run, settled } from '../helpers/runtime.js';

const FAN = `name: fan
inputs: { type: object, properties: { n: { type: array } }, required: [n] }
tasks:
  each: { kind: work, for_each: "\${{ inputs.n }}" }
`;

const GRID = `name: grid
inputs: { type: object, properties: { n: { type: array } }, required: [n] }
tasks:
  cells:
    kind: work
    args: { all: "\${{ inputs.n.map(a, inputs.n.map(b, inputs.n.map(c, inputs.n.map(d, a + b + c + d)))) }}" }
`;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function compileFailure(promise: Promise<unknown>): Promise<CompileError> {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(CompileError);
  return error as CompileError;
}

describe(`limits: inputs that would exhaust a process fail fast with a diagnostic (${backend})`, () => {
  it('a for_each over 1,000,000 items is a for-each diagnostic at start, in seconds rather than minutes', async () => {
    const rt = await drivenRuntime({ definitions: { fan: FAN } });
    const started = performance.now();
    const error = await compileFailure(rt.start('fan', { n: range(1_000_000) }));
    expect(performance.now() - started).toBeLessThan(patient(5000));
    expect(error.diagnostics.map((d) => [d.rule, d.message])).toEqual([
      ['for-each', 'for_each of task "each" yielded 1,000,000 items, over the limit of 10,000 (limit for_each_items)'],
    ]);
    expect((await rt.listWorkflows()).workflows).toEqual([]);
  });

  it("the limits are the runtime's to set", async () => {
    const rt = await drivenRuntime({ definitions: { fan: FAN }, limits: { forEachItems: 3 } });
    await expect(rt.start('fan', { n: range(3) })).resolves.toBeTypeOf('string');
    const error = await compileFailure(rt.start('fan', { n: range(4) }));
    expect(error.diagnostics[0].message).toMatch(/4 items, over the limit of 3/);
    const small = await drivenRuntime({ definitions: { fan: FAN }, limits: { planTasks: 10 } });
    expect((await compileFailure(small.start('fan', { n: range(11) }))).diagnostics[0].message).toBe(
      'the plan would have over 10 tasks (limit plan_tasks) at task "each"',
    );
  });

  it('four nested maps over 100 items stop at the CEL budget: a cel-cost diagnostic at start, not minutes and gigabytes', async () => {
    const rt = await drivenRuntime({ definitions: { grid: GRID } });
    const started = performance.now();
    const error = await compileFailure(rt.start('grid', { n: range(100) }));
    expect(performance.now() - started).toBeLessThan(patient(3000));
    expect(error.diagnostics).toHaveLength(1);
    expect(error.diagnostics[0]).toMatchObject({ rule: 'cel-cost', severity: 'error', path: '/tasks/cells/args/all' });
    expect(error.diagnostics[0].message).toMatch(
      new RegExp(
        '^task "cells", args.all: template stopped: the expression ' +
          "(ran for over 100 ms|'s cost is over the budget of 1,000,000 comprehension steps) \\(limit cel_cost\\)$",
      ),
    );
  });

  it('a wait predicate that would run for minutes over a payload is a wait error, the emit returns at once, and a later signal still counts', async () => {
    const rt = await drivenRuntime({
      handlers: { work: async () => ({ ok: true }) },
      definitions: {
        guarded: `name: guarded
tasks:
  gate:
    kind: work
    wait:
      terms:
        ok: { signal: check, where: 'payload.n.map(a, payload.n.map(b, payload.n.map(c, a + b + c))).size() > 0 || payload.go == true' }
`,
      },
    });
    await rt.startWorker();
    const id = await rt.start('guarded');
    await settled(rt, async () => (await rt.workflow(id).task('gate')).wait?.phase === 'waiting');
    const started = performance.now();
    const emitted = await rt.workflow(id).signals.emit('check', { n: range(1000).map(Number) });
    expect(performance.now() - started).toBeLessThan(patient(2000));
    expect(emitted.resolved).toEqual([]);
    const diagnostics = await rt.workflow(id).waitDiagnostics('gate');
    expect(JSON.stringify(diagnostics)).toMatch(/over the budget of 1,000,000 comprehension steps|ran for over 100 ms/);
    await rt.workflow(id).signals.emit('check', { n: [], go: true });
    expect((await final(rt, id)).state).toBe('completed');
  });

  it('a start task whose for_each goes over the limit fails its attempts with the reason', async () => {
    const rt = await drivenRuntime({
      handlers: { work: async () => ({}) },
      limits: { forEachItems: 5 },
      definitions: {
        child: 'name: child\ntasks:\n  t: { kind: work }\n',
        parent: `name: parent
tasks:
  kids: { start: { workflow: child, group: kids, for_each: "\${{ [1, 2, 3, 4, 5, 6] }}", inputs: {} }, max_attempts: 1 }
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'parent');
    expect(workflow.state).toBe('failed');
    expect(tasks.kids.errors[0].message).toBe('start.for_each yielded 6 items, over the limit of 5 (limit for_each_items)');
  });
});
