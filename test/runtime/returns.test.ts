import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import { backend, definitionsDir, drivenRuntime, final, run } from '../helpers/runtime.js';

// A task's `returns` at run time: an output that breaks it is the attempt's error (output_invalid), and reads
// of a typed output see its integers as CEL ints.
const RETURNS = `name: scored
tasks:
  score:
    kind: score
    max_attempts: 1
    returns:
      type: object
      required: [risk, n]
      properties:
        risk: { type: number }
        n: { type: integer }
  decide:
    kind: decide
    deps: [score]
    when: 'deps["score"].output.n + 1 == 3'
    args: { next: '\${{ deps["score"].output.n * 2 }}' }
output:
  n: "\${{ tasks.score.output.n + 10 }}"
`;

// the kind's schema comes from the project config (registerDefinitions' kinds)
const BY_KIND = `name: by_kind
tasks:
  check: { kind: score, max_attempts: 1 }
`;

describe(`a task's returns at run time (${backend})`, () => {
  it('an output that fits completes, and its integers are CEL ints in when, deferred args and the output', async () => {
    const rt = await drivenRuntime({
      definitions: { scored: RETURNS },
      handlers: { score: async () => ({ risk: 0.2, n: 2 }), decide: async (args) => args },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'scored');
    expect(workflow).toMatchObject({ state: 'completed', output: { n: 12 } });
    expect(tasks.decide).toMatchObject({ state: 'completed', output: { next: 4 } });
  });

  it('an output that breaks it ends the attempt with output_invalid, naming where and by which rule; the API says so', async () => {
    const rt = await drivenRuntime({
      definitions: { scored: RETURNS },
      handlers: { score: async () => ({ risk: 'high', n: 2.5, extra: true }), decide: async () => ({}) },
    });
    await rt.startWorker();
    const { id, workflow, tasks } = await run(rt, 'scored');
    expect(workflow.state).toBe('failed');
    expect(tasks.score.state).toBe('discarded');
    expect(tasks.score.errors).toHaveLength(1);
    expect(tasks.score.errors[0]).toMatchObject({
      kind: 'output',
      code: 'output_invalid',
      message: 'the handler\'s output breaks the returns schema of task "score": /risk must be number (type); /n must be integer (type)',
    });
    expect(tasks.score.output).toBeNull();
    const server = await startApiServer(rt, { token: 't' });
    try {
      const status = (await new ApiClient(server.url, 't').status(id)) as { tasks: { name: string; errors: { code?: string }[] }[] };
      expect(status.tasks.find((t) => t.name === 'score')?.errors[0].code).toBe('output_invalid');
    } finally {
      await server.close();
    }
  });

  it("a kind's returns from the project config holds for every task of the kind, and is part of the version", async () => {
    const rt = await drivenRuntime({ handlers: { score: async () => ({ risk: 'high' }) } });
    await rt.startWorker();
    const kinds = { score: { returns: { type: 'object', properties: { risk: { type: 'number' } } } } };
    const registered = await rt.registerDefinitions(definitionsDir({ by_kind: BY_KIND }), { kinds });
    expect(registered.validation.errors).toBe(0);
    const id = await rt.start('by_kind');
    await final(rt, id);
    const check = await rt.workflow(id).task('check');
    expect(check.errors[0]).toMatchObject({ code: 'output_invalid', message: expect.stringContaining('/risk must be number (type)') });
    // the same definition under the kind's schema is another version: its hash holds the schema
    const plain = await drivenRuntime({ handlers: { score: async () => ({ risk: 'high' }) } });
    await plain.startWorker();
    const unchecked = await plain.registerDefinitions(definitionsDir({ by_kind: BY_KIND }));
    expect(unchecked.validation.definitions[0].hash).not.toBe(registered.validation.definitions[0].hash);
    const other = await plain.start('by_kind');
    expect((await final(plain, other)).state).toBe('completed');
  });

  it('a pattern runs in linear time: ^(a+)+$ against a 100,000-character output is output_invalid at once, and the other tasks start meanwhile', async () => {
    const definition = `name: patterned
inputs:
  type: object
  properties: { code: { type: string, pattern: '^(a+)+$' } }
tasks:
  big:
    kind: big
    max_attempts: 1
    returns: { type: object, properties: { text: { type: string, pattern: '^(a+)+$' } } }
  small:
    kind: small
    for_each: ${JSON.stringify(Array.from({ length: 20 }, (_, i) => i))}
`;
    const rt = await drivenRuntime({
      definitions: { patterned: definition },
      handlers: { big: async () => ({ text: `${'a'.repeat(100_000)}!` }), small: async () => ({}) },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'patterned');
    expect(workflow.state).toBe('failed');
    expect(tasks.big.errors[0]).toMatchObject({ code: 'output_invalid' });
    expect(tasks.big.errors[0].message).toContain('/text must match pattern "^(a+)+$"');
    expect(Object.entries(tasks).filter(([name, t]) => name.startsWith('small[') && t.state === 'completed')).toHaveLength(20);
    // the same pattern in the inputs schema: the start is refused, without a backtracking engine's minutes
    const started = performance.now();
    await expect(rt.start('patterned', { code: `${'a'.repeat(100_000)}!` })).rejects.toThrow(/code: must match pattern/);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
