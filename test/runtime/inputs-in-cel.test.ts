import { describe, expect, it } from 'vitest';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const onboarding = `name: onboarding
inputs:
  type: object
  properties:
    user_id: { type: string }
    fast_track: { type: boolean, default: false }
  required: [user_id]
tasks:
  activate:
    kind: k
    wait:
      expr: verified || fast
      terms:
        verified: { signal: email_verified, where: payload.user_id == inputs.user_id }
        fast: { expr: inputs.fast_track }
`;

describe(`inputs in the CEL that runs at run time: where and expr terms (${backend})`, () => {
  it("a signal's predicate compares its payload with the workflow's inputs", async () => {
    const rt = await drivenRuntime({ definitions: { onboarding } });
    const id = await rt.start('onboarding', { user_id: 'u-7' });
    const h = rt.workflow(id);
    const other = await h.signals.emit('email_verified', { user_id: 'u-8' });
    expect(other.resolved).toEqual([]);
    const mine = await h.signals.emit('email_verified', { user_id: 'u-7' });
    expect(mine.resolved).toEqual(['activate']);
    const evidence = (await h.task('activate')).wait!.evidence!;
    expect(evidence.terms.find((t) => t.name === 'verified')).toMatchObject({ value: true, matched: 1 });
  });

  it('a generic term reads the inputs (typed, defaults applied)', async () => {
    const rt = await drivenRuntime({ definitions: { onboarding } });
    const fast = await rt.start('onboarding', { user_id: 'u-1', fast_track: true });
    expect((await rt.workflow(fast).task('activate')).wait!.phase).toBe('resolved');
    const slow = await rt.start('onboarding', { user_id: 'u-2' });
    expect((await rt.workflow(slow).task('activate')).wait!.phase).toBe('waiting');
  });
});
