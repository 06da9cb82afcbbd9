import { describe, expect, it } from 'vitest';
import { compile } from '../../src/compiler/instantiate.js';
import { validate } from '../../src/compiler/validate.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { backend, drivenRuntime, run } from '../helpers/runtime.js';

const handlers: Handlers = {
  create_account: async (args: { user: string }) => ({ account_id: `acc-${args.user}`, parcels: [{ id: 'p1' }, { id: 'p2' }] }),
  echo: async (args) => args,
};

const onboarding = `name: onboarding
inputs:
  type: object
  properties:
    user: { type: string }
    parcels: { type: array, default: [a, b] }
  required: [user]
tasks:
  create_account: { kind: create_account, args: { user: "\${{ inputs.user }}" } }
  welcome:
    kind: echo
    deps: [create_account]
    args:
      account: '\${{ deps["create_account"].output.account_id }}'
      greeting: 'hello \${{ inputs.user }} (\${{ deps["create_account"].state }})'
      literal: "\${{ inputs.user }}"
    metadata:
      account: '\${{ deps["create_account"].output.account_id }}'
  ship:
    kind: echo
    deps: [create_account]
    for_each: \${{ inputs.parcels }}
    args:
      parcel: \${{ item }}
      label: '\${{ deps["create_account"].output.account_id + "-" + item + "-" + string(index) }}'
  summary:
    kind: echo
    deps: [ship]
    args:
      labels: '\${{ deps["ship"].map(s, s.output.label) }}'
output:
  welcome: \${{ tasks.welcome.output }}
`;

describe(`args and metadata from deps (${backend})`, () => {
  it('the plan keeps the templates that read deps (byte-identical for the same inputs) and renders the others', () => {
    const def = validate([{ path: 'onboarding.yaml', content: onboarding }]).definitions[0];
    const plan = compile(def, { user: 'ada' }, { id: 'w1', now: '2026-01-01T00:00:00Z' });
    const welcome = plan.tasks.find((t) => t.name === 'welcome')!;
    expect(welcome.args).toEqual({
      account: '${{ deps["create_account"].output.account_id }}',
      greeting: 'hello ${{ inputs.user }} (${{ deps["create_account"].state }})',
      literal: 'ada',
    });
    expect(welcome.deferred).toEqual({ paths: ['/args/account', '/args/greeting', '/metadata/account'] });
    expect(plan.tasks.find((t) => t.name === 'ship[1]')!.deferred).toEqual({ paths: ['/args/label'], item: 'b' });
    expect(plan.tasks.find((t) => t.name === 'create_account')!.deferred).toBeNull();
    expect(JSON.stringify(compile(def, { user: 'ada' }, { id: 'w1', now: '2026-01-01T00:00:00Z' }))).toBe(JSON.stringify(plan));
  });

  it("a task's args read a dep's output and state when it runs; a for_each expansion reads its item and its dep; a fan-in reads the expansions", async () => {
    const rt = await drivenRuntime({ handlers, definitions: { onboarding } });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'onboarding', { user: 'ada' });
    expect(workflow.state).toBe('completed');
    expect(tasks.welcome.output).toEqual({ account: 'acc-ada', greeting: 'hello ada (completed)', literal: 'ada' });
    // stored with the attempt: what the handler ran with
    expect(tasks.welcome.args).toEqual({ account: 'acc-ada', greeting: 'hello ada (completed)', literal: 'ada' });
    expect(tasks.welcome.metadata).toEqual({ account: 'acc-ada' });
    expect(tasks['ship[0]'].output).toEqual({ parcel: 'a', label: 'acc-ada-a-0' });
    expect(tasks['ship[1]'].output).toEqual({ parcel: 'b', label: 'acc-ada-b-1' });
    expect(tasks.summary.output).toEqual({ labels: ['acc-ada-a-0', 'acc-ada-b-1'] });
    expect(workflow.output).toEqual({ welcome: tasks.welcome.output });
  });

  it('a template that fails to render is an attempt error: retried by the rules, then discarded', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        broken: `name: broken
tasks:
  create_account: { kind: create_account, args: { user: x } }
  welcome:
    kind: echo
    deps: [create_account]
    max_attempts: 2
    retry: { initial: 10ms, jitter: false }
    args:
      missing: 'for \${{ deps["create_account"].output.nope }}'
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'broken');
    expect(workflow.state).toBe('failed');
    expect(tasks.welcome.state).toBe('discarded');
    expect(tasks.welcome.errors).toHaveLength(2);
    expect(tasks.welcome.errors[0].message).toMatch(/^task "welcome", args.missing: template failed: /);
    // with its code, which a task's retry.non_retryable may name
    expect(tasks.welcome.errors.map((e) => e.code)).toEqual(['args_invalid', 'args_invalid']);
  });

  it('an arg that is one read of data that may be absent (an optional input, an output field not required) is left out when absent', async () => {
    const optional = `name: optional
inputs: { type: object, properties: { reason: { type: string } } }
tasks:
  charge:
    kind: echo
    returns: { type: object, properties: { note: { type: string }, reason: { type: string } } }
    args: { reason: "\${{ inputs.reason }}" }
  notify:
    kind: echo
    deps: [charge]
    args: { note: "\${{ deps.charge.output.note }}", reason: "\${{ deps.charge.output.reason }}", fixed: 1 }
`;
    const rt = await drivenRuntime({ handlers, definitions: { optional } });
    await rt.startWorker();
    const without = await run(rt, 'optional', {});
    expect(without.workflow.state).toBe('completed');
    expect(without.tasks.charge.args).toEqual({});
    expect(without.tasks.notify.args).toEqual({ fixed: 1 });
    const given = await run(rt, 'optional', { reason: 'late' });
    expect(given.tasks.notify.args).toEqual({ reason: 'late', fixed: 1 });
  });
});
