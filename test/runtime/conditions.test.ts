import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import examples from '../../examples/handlers.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { VirtualClock } from '../../src/testing/virtual-clock.js';
import { repoRoot } from '../helpers/cli.js';
import { backend, drivenRuntime, final, run, settled } from '../helpers/runtime.js';

const states = (tasks: Record<string, { state: string }>) => Object.fromEntries(Object.entries(tasks).map(([k, v]) => [k, v.state]));

const handlers: Handlers = {
  check: async (args) => ({ verified: (args as { verified: boolean }).verified }),
  ok: async (_args, ctx) => ({ ran: ctx.taskName }),
  boom: async () => {
    throw new Error('always fails');
  },
};

// a branch on a dep's output, and a join that runs whichever side was taken
const branch = `name: branch
inputs:
  type: object
  properties:
    verified: { type: boolean }
    plan: { type: string, default: free }
  required: [verified]
tasks:
  check: { kind: check, args: { verified: "\${{ inputs.verified }}" } }
  activate_trial:
    kind: ok
    deps: [check]
    when: deps["check"].output.verified
  send_reminder:
    kind: ok
    deps: [check]
    when: '!deps["check"].output.verified'
  after_trial: { kind: ok, deps: [activate_trial] }
  join:
    kind: ok
    deps: [activate_trial, send_reminder]
    ignore_skipped_deps: true
output:
  trial: \${{ tasks.activate_trial.state == "completed" }}
  reminder_state: \${{ tasks.send_reminder.state }}
`;

describe(`conditional tasks: when and skipped (${backend})`, () => {
  it('a branch runs one side; the other is skipped, its dependents too; a join ignoring skipped deps runs; the workflow completes', async () => {
    const rt = await drivenRuntime({ handlers, definitions: { branch } });
    await rt.startWorker();
    const yes = await run(rt, 'branch', { verified: true });
    expect(states(yes.tasks)).toEqual({
      check: 'completed',
      activate_trial: 'completed',
      send_reminder: 'skipped',
      after_trial: 'completed',
      join: 'completed',
    });
    expect(yes.workflow).toMatchObject({ state: 'completed', output: { trial: true, reminder_state: 'skipped' } });
    expect(yes.tasks.send_reminder).toMatchObject({ attempt: 0, errors: [], output: null });

    const no = await run(rt, 'branch', { verified: false });
    expect(states(no.tasks)).toEqual({ check: 'completed', activate_trial: 'skipped', send_reminder: 'completed', after_trial: 'skipped', join: 'completed' });
    expect(no.workflow).toMatchObject({ state: 'completed', output: { trial: false, reminder_state: 'completed' } });
    expect(no.workflow.tasks_failed).toBe(0);
  });

  it('when reads inputs, workflow, and a dep state; a root condition is decided at start', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        refs: `name: refs
inputs:
  type: object
  properties:
    plan: { type: string }
  required: [plan]
tasks:
  pro_only: { kind: ok, when: inputs.plan == "pro" }
  named: { kind: ok, when: workflow.name == "refs" && workflow.id != "" }
  bad: { kind: boom, max_attempts: 1 }
  on_failure:
    kind: ok
    deps: [bad]
    ignore_discarded_deps: true
    when: deps["bad"].state == "discarded"
  on_success:
    kind: ok
    deps: [bad]
    ignore_discarded_deps: true
    when: deps["bad"].state == "completed"
`,
      },
    });
    const id = await rt.start('refs', { plan: 'free' });
    // decided in the start's transaction: nothing had to run
    expect((await rt.workflow(id).task('pro_only')).state).toBe('skipped');
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'refs', { plan: 'pro' });
    expect(states(tasks)).toEqual({ pro_only: 'completed', named: 'completed', bad: 'discarded', on_failure: 'completed', on_success: 'skipped' });
    expect(workflow.state).toBe('failed');
  });

  it('a condition that fails to evaluate discards its task with the error; its dependents are cancelled', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        broken: `name: broken
tasks:
  check: { kind: check, args: { verified: true } }
  reads_missing: { kind: ok, deps: [check], when: 'deps["check"].output.nope == 1' }
  after: { kind: ok, deps: [reads_missing] }
`,
      },
    });
    await rt.startWorker();
    const { workflow, tasks } = await run(rt, 'broken');
    expect(states(tasks)).toEqual({ check: 'completed', reads_missing: 'discarded', after: 'cancelled' });
    expect(tasks.reads_missing.errors.at(-1)).toMatchObject({ kind: 'condition', attempt: 0 });
    expect(tasks.reads_missing.errors.at(-1)!.message).toMatch(/^when: /);
    expect(workflow.state).toBe('failed');
  });

  it('a skipped cascade runs through a chain; ignore_skipped_deps in defaults; a skipped dep reads as null', async () => {
    const rt = await drivenRuntime({
      handlers: { ...handlers, echo: async (_args, ctx) => ({ deps: ctx.taskName }) },
      definitions: {
        cascade: `name: cascade
tasks:
  never: { kind: ok, when: "false" }
  a: { kind: ok, deps: [never] }
  b: { kind: ok, deps: [a] }
  c: { kind: ok, deps: [b] }
`,
        tolerant: `name: tolerant
defaults: { ignore_skipped_deps: true }
tasks:
  never: { kind: ok, when: "false" }
  reads:
    kind: ok
    deps: [never]
    when: deps["never"].output == null && deps["never"].state == "skipped"
  strict: { kind: ok, deps: [never], ignore_skipped_deps: false }
`,
      },
    });
    await rt.startWorker();
    const cascade = await run(rt, 'cascade');
    expect(states(cascade.tasks)).toEqual({ never: 'skipped', a: 'skipped', b: 'skipped', c: 'skipped' });
    expect(cascade.workflow.state).toBe('completed');
    const tolerant = await run(rt, 'tolerant');
    expect(states(tolerant.tasks)).toEqual({ never: 'skipped', reads: 'completed', strict: 'skipped' });
  });

  it('a condition and a wait: the wait only becomes active when the condition holds', async () => {
    const rt = await drivenRuntime({
      handlers,
      definitions: {
        gated: `name: gated
inputs:
  type: object
  properties:
    wait_for_approval: { type: boolean }
  required: [wait_for_approval]
tasks:
  approve:
    kind: ok
    when: inputs.wait_for_approval
    wait:
      terms:
        approved: { signal: approved }
`,
      },
    });
    const skipped = await rt.start('gated', { wait_for_approval: false });
    expect(await rt.workflow(skipped).load()).toMatchObject({ state: 'completed' });
    expect((await rt.workflow(skipped).task('approve')).state).toBe('skipped');
    const waiting = await rt.start('gated', { wait_for_approval: true });
    const task = await rt.workflow(waiting).task('approve');
    expect(task.state).toBe('pending');
    expect(task.wait!.phase).toBe('waiting');
    expect((await rt.workflow(waiting).signals.emit('approved', {})).resolved).toEqual(['approve']);
  });

  it('whole-workflow retry: failed_only leaves skipped tasks alone; all decides every condition again', async () => {
    let verified = false;
    const rt = await drivenRuntime({
      handlers: { ...handlers, check: async () => ({ verified }) },
      definitions: { branch },
    });
    await rt.startWorker();
    const first = await run(rt, 'branch', { verified: false });
    expect(first.tasks.activate_trial.state).toBe('skipped');
    const h = rt.workflow(first.id);
    expect((await h.retry({ mode: 'failed_only' })).retried).toEqual([]);
    verified = true;
    const again = await h.retry({ mode: 'all' });
    expect(again.retried.sort()).toEqual(['activate_trial', 'after_trial', 'check', 'join', 'send_reminder']);
    const workflow = await final(rt, first.id);
    expect(workflow).toMatchObject({ state: 'completed', output: { trial: true, reminder_state: 'skipped' } });
    const tasks = Object.fromEntries((await h.tasks()).map((t) => [t.name, t.state]));
    expect(tasks).toEqual({ check: 'completed', activate_trial: 'completed', send_reminder: 'skipped', after_trial: 'completed', join: 'completed' });
  });

  it('an extension whose dep was skipped is skipped at once; one with a condition decides it when its deps are done', async () => {
    const rt2 = await drivenRuntime({
      handlers,
      definitions: {
        open: `name: open
tasks:
  never: { kind: ok, when: "false" }
  gate: { kind: ok, wait: { terms: { go: { signal: go } } } }
`,
      },
    });
    const open = await rt2.start('open');
    const h2 = rt2.workflow(open);
    await h2.extend({ tasks: { late: { kind: 'ok', deps: ['never'] }, cond: { kind: 'ok', deps: ['gate'], when: 'deps["gate"].state == "completed"' } } });
    expect((await h2.task('late')).state).toBe('skipped');
    expect((await h2.task('cond')).state).toBe('pending');
    await rt2.startWorker();
    await h2.signals.emit('go', {});
    expect((await final(rt2, open)).state).toBe('completed');
    expect((await h2.task('cond')).state).toBe('completed');
  });
});

describe(`the user_onboarding example from definitions/ (${backend})`, () => {
  it('a verified user gets the trial; nobody verifying for three days gets the reminder; the join runs either way', async () => {
    const clock = new VirtualClock(new Date());
    const rt = await drivenRuntime({
      handlers: examples,
      virtualClock: clock,
      workerDeadAfterMs: 30 * 86_400_000,
      leader: false,
      retention: { closedMs: null, cancelledMs: null },
    });
    expect((await rt.registerDefinitions(join(repoRoot, 'definitions'))).validation.errors).toBe(0);
    await rt.startWorker();
    const verified = rt.workflow(await rt.start('user_onboarding', { user_id: 'u1', email: 'u1@example.com' }));
    const silent = rt.workflow(await rt.start('user_onboarding', { user_id: 'u2', email: 'u2@example.com' }));
    await settled(
      rt,
      async () => (await verified.task('check_verified')).wait?.phase === 'waiting' && (await silent.task('check_verified')).wait?.phase === 'waiting',
    );
    // another user's verification does not count for u2
    expect((await verified.signals.emit('email_verified', { user_id: 'someone else' })).resolved).toEqual([]);
    expect((await verified.signals.emit('email_verified', { user_id: 'u1' })).resolved).toEqual(['check_verified']);
    expect(await final(rt, verified.id)).toMatchObject({
      state: 'completed',
      output: { user_id: 'u1', trial: true, reminded: false },
    });
    clock.advance(3 * 86_400_000 + 1000);
    await rt.maintenance();
    expect(await final(rt, silent.id)).toMatchObject({
      state: 'completed',
      output: { user_id: 'u2', trial: false, reminded: true },
    });
    const states = async (h: typeof silent) => Object.fromEntries((await h.tasks()).map((t) => [t.name, t.state]));
    expect(await states(verified)).toMatchObject({ activate_trial: 'completed', send_reminder: 'skipped', record_onboarding: 'completed' });
    expect(await states(silent)).toMatchObject({ activate_trial: 'skipped', send_reminder: 'completed', record_onboarding: 'completed' });
  });
});
