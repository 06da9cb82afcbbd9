import { describe, expect, it } from 'vitest';
import { validate } from '../../src/compiler/validate.js';
import { backend, definitionsDir, drivenRuntime, final, run } from '../helpers/runtime.js';

const LIMITED = `name: limited
tasks:
  small: { kind: make, max_output: 2KiB, args: { n: 3000 } }
  roomy: { kind: make, max_output: 10KB, args: { n: 3000 } }
  plain: { kind: make, args: { n: 3000 } }
`;

// every reader of a large output (over 64 KiB: claims name it rather than carry it)
const READERS = `name: readers
tasks:
  make: { kind: big }
  use: { kind: use, deps: [make], args: { head: "\${{ deps.make.output.blob.substring(0, 3) }}" } }
  size: { kind: size, deps: [make], when: 'size(deps["make"].output.blob) > 10' }
output:
  length: "\${{ size(tasks.make.output.blob) }}"
`;

const PASSED = `name: passed
tasks:
  make: { kind: big, max_output: 64MiB }
  use: { kind: use, deps: [make] }
`;

const make = async (args: { n: number }) => ({ blob: 'x'.repeat(args.n) });

describe(`max_output: the largest output a task may return (${backend})`, () => {
  it('an output over the task’s max_output ends it once with output_too_large, naming the task and both sizes; others pass', async () => {
    const rt = await drivenRuntime({ definitions: { limited: LIMITED }, handlers: { make } });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'limited');
    expect(workflow.state).toBe('failed');
    expect(tasks.small.state).toBe('discarded');
    expect(tasks.small.attempt).toBe(1);
    expect(tasks.small.errors).toEqual([
      expect.objectContaining({
        kind: 'output',
        code: 'output_too_large',
        message:
          'task "small": its output is 3,011 bytes of JSON, over its max_output of 2,048 bytes (2 KiB); not retried: it would be too large again ' +
          '(raise max_output, up to 64 MiB, or store the data elsewhere and return a reference)',
      }),
    ]);
    expect(tasks.roomy).toMatchObject({ state: 'completed', output: { blob: 'x'.repeat(3000) } });
    expect(tasks.plain.state).toBe('completed');
  });

  it("a kind's max_output from the project config holds for its tasks; a task's own wins", async () => {
    const rt = await drivenRuntime({ handlers: { make } });
    await rt.startWorker();
    const defs = definitionsDir({ limited: LIMITED.replace('max_output: 10KB, ', '') });
    const registered = await rt.registerDefinitions(defs, { kinds: { make: { max_output: 100 } } });
    expect(registered.validation.errors).toBe(0);
    const id = await rt.start('limited');
    await final(rt, id);
    const tasks = Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t]));
    expect(tasks.small.errors[0].message).toContain('over its max_output of 2,048 bytes');
    expect(tasks.roomy.errors[0].message).toContain('over its max_output of 100 bytes');
    expect(tasks.plain.errors[0].code).toBe('output_too_large');
  });

  it('a large output reaches its dependent’s ctx.deps, args and when, the workflow output and the API unchanged', async () => {
    const blob = `${'ab'.repeat(150_000)}zz`;
    const rt = await drivenRuntime({
      definitions: { readers: READERS },
      handlers: {
        big: async () => ({ blob }),
        use: async (args: { head: string }, ctx) => ({ head: args.head, tail: (ctx.deps.make as { blob: string }).blob.slice(-4) }),
        size: async () => null,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'readers');
    expect(workflow).toMatchObject({ state: 'completed', output: { length: blob.length } });
    expect(tasks.use.output).toEqual({ head: 'aba', tail: 'abzz' });
    expect(tasks.size.state).toBe('completed');
    expect(tasks.make.output).toEqual({ blob });
    const { rows } = await rt.db.query<{ bytes: number }>(`SELECT output_bytes AS bytes FROM "${rt.schema}".tasks WHERE workflow_id = $1 AND name = 'make'`, [
      workflow.id,
    ]);
    expect(rows[0].bytes).toBe(blob.length + 11);
  });

  it('a 50 MB output passes to a dependent unchanged', async () => {
    let seen = '';
    const rt = await drivenRuntime({
      definitions: { passed: PASSED },
      handlers: {
        big: async () => ({ blob: `${'ab'.repeat(25 * 1024 * 1024 - 1)}zz` }),
        use: async (_args, ctx) => {
          const blob = (ctx.deps.make as { blob: string }).blob;
          seen = `${blob.length}:${blob.slice(0, 4)}:${blob.slice(-4)}`;
          return null;
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('passed');
    expect((await final(rt, id, 120_000)).state).toBe('completed');
    expect(seen).toBe(`${50 * 1024 * 1024}:abab:abzz`);
    const { rows } = await rt.db.query<{ bytes: number; length: number }>(
      `SELECT output_bytes AS bytes, length(output->>'blob') AS length FROM "${rt.schema}".tasks WHERE workflow_id = $1 AND name = 'make'`,
      [id],
    );
    expect(rows[0]).toEqual({ bytes: 50 * 1024 * 1024 + 11, length: 50 * 1024 * 1024 });
  }, 180_000);

  it('validate: a size it can read, from 1 byte to 64 MiB, on a task with a handler', () => {
    const check = (value: string) => {
      const r = validate([{ path: 'm.yaml', content: `name: m\ntasks:\n  t: { kind: k, max_output: ${value} }\n` }]);
      return r.diagnostics.map((d) => `${d.rule}: ${d.message}`);
    };
    expect(check('512KiB')).toEqual([]);
    expect(check('64MiB')).toEqual([]);
    expect(check('1')).toEqual([]);
    expect(check('65MiB')).toEqual(['schema: task "t": max_output: 65MiB is 68,157,440 bytes, over the most a task may declare (64 MiB)']);
    expect(check('0B')).toEqual(['schema: task "t": max_output: a limit of 0 bytes lets no output through']);
    expect(check('10GB')[0]).toMatch(/^schema: .*max_output/);
    expect(check('0')[0]).toMatch(/^schema: /);
    const start = validate([
      { path: 's.yaml', content: 'name: s\ntasks:\n  t: { start: { workflow: c }, max_output: 1MiB }\n' },
      { path: 'c.yaml', content: 'name: c\ntasks:\n  x: { kind: k }\n' },
    ]);
    expect(start.diagnostics.map((d) => d.message)).toContain('task "t": max_output limits a handler\'s output, and a start task has no handler');
  });
});
