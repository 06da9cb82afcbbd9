import { describe, expect, it } from 'vitest';
import { ExtensionError } from '../../src/runtime/errors.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

const base = `name: base
tasks:
  a: { kind: leaf }
  grow: { kind: grow, deps: [a], max_attempts: 1 }
  gate:
    kind: leaf
    wait: { terms: { go: { signal: go } } }
`;

function recorder(grow: Handlers['grow']) {
  const runs: string[] = [];
  const handlers: Handlers = {
    leaf: async (args, ctx) => (runs.push(ctx.taskName), { name: ctx.taskName, args }),
    grow: async (args, ctx) => (runs.push(ctx.taskName), grow(args, ctx)),
  };
  return { runs, handlers };
}

describe(`extending a running workflow (${backend})`, () => {
  it('from a handler: the new tasks commit with its completion and run after it', async () => {
    const { runs, handlers } = recorder(async (_a, ctx) => {
      const names = await ctx.extend({
        tasks: {
          child: { kind: 'leaf', deps: ['grow'], args: { from: '${{ inputs.from }}' } },
          fan: { kind: 'leaf', deps: ['a'], for_each: '${{ [1, 2] }}' },
          after_fan: { kind: 'leaf', deps: ['fan', 'child'] },
        },
      });
      return { added: names };
    });
    const rt = await drivenRuntime({
      handlers,
      definitions: { base: base.replace('name: base\n', 'name: base\ninputs: { type: object, properties: { from: { type: string } } }\n') },
    });
    await rt.startWorker();
    const id = await rt.start('base', { from: 'outer' });
    await settled(rt, async () => (await rt.workflow(id).task('gate')).wait?.phase === 'waiting');
    await settled(rt, async () => runs.includes('after_fan'));
    expect((await rt.workflow(id).task('grow')).output).toEqual({ added: ['child', 'fan[0]', 'fan[1]', 'after_fan'] });
    expect(runs.indexOf('child')).toBeGreaterThan(runs.indexOf('grow'));
    expect((await rt.workflow(id).task('child')).output).toEqual({ name: 'child', args: { from: 'outer' } });
    expect((await rt.workflow(id).task('after_fan')).deps.sort()).toEqual(['child', 'fan[0]', 'fan[1]']);
    await rt.workflow(id).signals.emit('go', {});
    const w = await final(rt, id);
    expect(w).toMatchObject({ state: 'completed', tasks_total: 7 });
    expect((await rt.workflow(id).task('a')).dependents).toEqual(['grow', 'fan[0]', 'fan[1]']);
  });

  it('from a handler, after its own ctx.transaction: the extension, its writes and the completion commit together', async () => {
    const { runs, handlers } = recorder(async (_a, ctx) => {
      await ctx.transaction(async (tx) => tx.query(`CREATE TABLE IF NOT EXISTS "${schema}".handler_notes (note text)`));
      await ctx.extend({ tasks: { child: { kind: 'leaf', deps: ['grow'] } } });
      return {};
    });
    const rt = await drivenRuntime({ handlers, definitions: { base } });
    const schema = rt.schema;
    await rt.startWorker();
    const id = await rt.start('base');
    await settled(rt, () => runs.includes('child'));
    expect((await rt.workflow(id).task('child')).deps).toEqual(['grow']);
    expect((await rt.db.query(`SELECT count(*)::int AS n FROM "${schema}".handler_notes`)).rows).toEqual([{ n: 0 }]);
  });

  it('from a handler that then fails: nothing is added', async () => {
    const { handlers } = recorder(async (_a, ctx) => {
      await ctx.extend({ tasks: { child: { kind: 'leaf', deps: ['grow'] } } });
      throw new Error('changed my mind');
    });
    const rt = await drivenRuntime({ handlers, definitions: { base } });
    await rt.startWorker();
    const id = await rt.start('base');
    await settled(rt, async () => (await rt.workflow(id).task('grow')).state === 'discarded');
    expect((await rt.workflow(id).tasks()).map((t) => t.name).sort()).toEqual(['a', 'gate', 'grow']);
    expect((await rt.workflow(id).load()).tasks_total).toBe(3);
  });

  it('from outside: deps on finished and waiting tasks; a name clash and an invalid task are clear errors', async () => {
    const { runs, handlers } = recorder(async () => ({}));
    const rt = await drivenRuntime({ handlers, definitions: { base } });
    await rt.startWorker();
    const id = await rt.start('base');
    const h = rt.workflow(id);
    await settled(rt, async () => (await h.task('grow')).state === 'completed');
    expect((await h.extend({ tasks: { late: { kind: 'leaf', deps: ['gate', 'a'] }, now: { kind: 'leaf', deps: ['a'] } } })).sort()).toEqual(['late', 'now']);
    await settled(rt, () => runs.includes('now'));
    expect(runs).not.toContain('late');
    await expect(h.extend({ tasks: { a: { kind: 'leaf' } } })).rejects.toThrow(/already has task "a"/);
    const bad = await h.extend({ tasks: { x: { kind: 'leaf', deps: ['nope'] } } }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ExtensionError);
    expect((bad as ExtensionError).diagnostics.map((d) => d.rule)).toEqual(['unknown-dep']);
    await expect(h.extend({ tasks: {} })).rejects.toThrow(/at least one task/);
    await h.signals.emit('go', {});
    expect((await final(rt, h.id)).state).toBe('completed');
    expect(runs).toContain('late');
    await expect(h.extend({ tasks: { later: { kind: 'leaf' } } })).rejects.toThrow(/only a running workflow can be extended/);
  });

  it("added tasks take the workflow's defaults, as its declared tasks do; their own settings win", async () => {
    const withDefaults = `name: defaulted
defaults:
  max_attempts: 5
  queue: slow
  priority: 3
  timeout: 90s
  retry: { backoff: linear, initial: 2s }
  ignore_cancelled_deps: true
tasks:
  gate:
    kind: leaf
    wait: { terms: { go: { signal: go } } }
`;
    const rt = await drivenRuntime({ definitions: { defaulted: withDefaults } });
    const id = await rt.start('defaulted');
    await rt.workflow(id).extend({ tasks: { added: { kind: 'leaf', deps: ['gate'] }, own: { kind: 'leaf', max_attempts: 2, queue: 'fast' } } });
    const [declared, added, own] = await Promise.all(['gate', 'added', 'own'].map((n) => rt.workflow(id).task(n)));
    const settings = (t: typeof added) => ({ max_attempts: t.max_attempts, queue: t.queue, priority: t.priority, timeout_ms: t.timeout_ms });
    expect(settings(added)).toEqual({ max_attempts: 5, queue: 'slow', priority: 3, timeout_ms: 90_000 });
    expect(settings(added)).toEqual(settings(declared));
    expect(settings(own)).toEqual({ max_attempts: 2, queue: 'fast', priority: 3, timeout_ms: 90_000 });
    const flags = await rt.db.query<{ name: string; retry: unknown; ignore_cancelled_deps: boolean }>(
      `SELECT name, retry, ignore_cancelled_deps FROM "${rt.schema}".tasks WHERE workflow_id = $1 ORDER BY name`,
      [id],
    );
    for (const row of flags.rows) {
      expect(row.retry).toEqual({ backoff: 'linear', initial_ms: 2000, max_ms: 3_600_000, jitter: true });
      expect(row.ignore_cancelled_deps).toBe(true);
    }
  });

  it('concurrent extensions of the same workflow are serialised: one name wins, the other is a clash', async () => {
    const { handlers } = recorder(async () => ({}));
    const rt = await drivenRuntime({ handlers, definitions: { base } });
    const id = await rt.start('base');
    const results = await Promise.allSettled([
      rt.workflow(id).extend({ tasks: { same: { kind: 'leaf' } } }),
      rt.workflow(id).extend({ tasks: { same: { kind: 'leaf', deps: ['a'] } } }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(String((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(/already has task "same"/);
    expect((await rt.workflow(id).tasks()).filter((t) => t.name === 'same')).toHaveLength(1);
  });
});
