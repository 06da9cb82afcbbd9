import { describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, run } from '../helpers/runtime.js';

const echo: Handlers = {
  step: async (args: { n?: number }, ctx) => ({ task: ctx.taskName, n: args.n ?? null, saw: ctx.deps }),
  sum: async (_args, ctx) => ({ total: Object.values(ctx.deps).reduce((a: number, d) => a + ((d as { n: number }).n ?? 0), 0) }),
};

describe(`advancement (${backend})`, () => {
  it('a chain runs in order and outputs flow to dependents', async () => {
    const rt = await drivenRuntime({
      handlers: echo,
      definitions: {
        chain: `name: chain
tasks:
  a: { kind: step, args: { n: 1 } }
  b: { kind: step, deps: [a], args: { n: 2 } }
  c: { kind: step, deps: [b], args: { n: 3 } }
output:
  last: "\${{ tasks.c.output.n }}"
  b_saw: "\${{ tasks.b.output.saw.a.n }}"
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'chain');
    expect(workflow.state).toBe('completed');
    expect(workflow.output).toEqual({ last: 3, b_saw: 1 });
    expect(new Date(tasks.a.finalized_at!).getTime()).toBeLessThanOrEqual(new Date(tasks.b.started_at!).getTime());
    expect(new Date(tasks.b.finalized_at!).getTime()).toBeLessThanOrEqual(new Date(tasks.c.started_at!).getTime());
    expect(tasks.c.output).toMatchObject({ saw: { b: { n: 2 } } });
  });

  it('a diamond joins both branches', async () => {
    const rt = await drivenRuntime({
      handlers: echo,
      definitions: {
        diamond: `name: diamond
tasks:
  top: { kind: step, args: { n: 1 } }
  left: { kind: step, deps: [top], args: { n: 10 } }
  right: { kind: step, deps: [top], args: { n: 100 } }
  join: { kind: sum, deps: [left, right] }
output: { total: "\${{ tasks.join.output.total }}" }
`,
      },
    });
    await rt.startWorker();
    const { workflow } = await run(rt, 'diamond');
    expect(workflow).toMatchObject({ state: 'completed', output: { total: 110 } });
  });

  it('fan-out 1 -> 200 -> 1', async () => {
    const rt = await drivenRuntime({
      handlers: echo,
      queues: { default: 20 },
      definitions: {
        fan: `name: fan
inputs: { type: object, properties: { items: { type: array } }, required: [items] }
tasks:
  root: { kind: step }
  work:
    kind: step
    deps: [root]
    for_each: "\${{ inputs.items }}"
    args: { n: "\${{ item }}" }
  join: { kind: sum, deps: [work] }
output:
  total: "\${{ tasks.join.output.total }}"
  count: "\${{ size(tasks.work) }}"
`,
      },
    });
    await rt.startWorker();
    const items = Array.from({ length: 200 }, (_, i) => i + 1);
    const { workflow, tasks } = await run(rt, 'fan', { items });
    expect(workflow).toMatchObject({ state: 'completed', output: { total: 20_100, count: 200 }, tasks_total: 202, tasks_open: 0 });
    expect(tasks['work[199]'].deps).toEqual(['root']);
    expect(tasks.join.deps).toHaveLength(200);
  });

  it('for_each with keys; an empty fan-out satisfies its dependents at once', async () => {
    const rt = await drivenRuntime({
      handlers: echo,
      definitions: {
        keyed: `name: keyed
inputs: { type: object, properties: { parcels: { type: array }, none: { type: array } }, required: [parcels, none] }
tasks:
  ship:
    kind: step
    for_each: "\${{ inputs.parcels }}"
    key: "\${{ item.id }}"
    args: { n: "\${{ item.w }}" }
  skipped:
    kind: step
    for_each: "\${{ inputs.none }}"
  notify: { kind: sum, deps: [ship, skipped] }
output:
  keys: "\${{ tasks.ship.map(s, s.key) }}"
  skipped: "\${{ size(tasks.skipped) }}"
  total: "\${{ tasks.notify.output.total }}"
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'keyed', {
      parcels: [
        { id: 'p1', w: 2 },
        { id: 'p2', w: 3 },
      ],
      none: [],
    });
    expect(workflow).toMatchObject({ state: 'completed', output: { keys: ['p1', 'p2'], skipped: 0, total: 5 } });
    expect(Object.keys(tasks).sort()).toEqual(['notify', 'ship[p1]', 'ship[p2]']);
  });

  it('loads a task, all tasks paged, deps direct and recursive, and an output', async () => {
    const rt = await drivenRuntime({
      handlers: echo,
      definitions: { deps: `name: deps\ntasks:\n  a: { kind: step }\n  b: { kind: step, deps: [a] }\n  c: { kind: step, deps: [b] }\n` },
    });
    await rt.startWorker();
    const { id } = await run(rt, 'deps');
    const wf = rt.workflow(id);
    expect(Object.keys(await wf.deps('c'))).toEqual(['b']);
    expect(Object.keys(await wf.deps('c', { recursive: true })).sort()).toEqual(['a', 'b']);
    expect((await wf.tasks({ limit: 2, offset: 1 })).map((t) => t.name)).toEqual(['b', 'c']);
    expect(await wf.output('a')).toMatchObject({ task: 'a' });
    expect((await wf.task('b')).state).toBe('completed');
  });
});
