import { describe, expect, it } from 'vitest';
import { backend, drivenRuntime, settle } from '../helpers/runtime.js';

// A quorum of people, not of rows: `distinct` counts the distinct values of an expression over the matching
// signals, first come first counted; `count` may come from the inputs.
const APPROVAL = `name: approval
inputs: { type: object, properties: { approvers: { type: array, items: { type: string } } }, required: [approvers] }
tasks:
  decide:
    kind: decide
    wait:
      terms:
        approved:
          signal: approval
          where: payload.approved == true
          distinct: payload.approver
          count: "\${{ size(inputs.approvers) }}"
`;

describe(`distinct quorums (${backend})`, () => {
  it('one approver twice does not make a quorum of two; a second approver does, and the evidence names them', async () => {
    const rt = await drivenRuntime({ definitions: { approval: APPROVAL }, handlers: { decide: async () => ({ ok: true }) } });
    await rt.startWorker();
    const id = await rt.start('approval', { approvers: ['grace', 'linus'] });
    const w = rt.workflow(id);
    await w.signals.emit('approval', { approved: true, approver: 'grace' });
    await w.signals.emit('approval', { approved: true, approver: 'grace' });
    // a rejection by another approver matches nothing, so it counts nothing
    await w.signals.emit('approval', { approved: false, approver: 'linus' });
    await settle(rt);
    const waiting = await w.task('decide');
    expect(waiting.state).toBe('pending');
    expect(waiting.wait?.last_evaluation?.terms[0]).toMatchObject({ matched: 1, required: 2, distinct: ['grace'], value: false });
    expect((await w.status()).tasks[0].pending_reason).toContain('approved 1/2 distinct (grace)');
    await w.signals.emit('approval', { approved: true, approver: 'linus' });
    await settle(rt);
    const done = await w.task('decide');
    expect(done.state).toBe('completed');
    expect(done.wait?.evidence?.terms[0]).toMatchObject({ matched: 2, required: 2, distinct: ['grace', 'linus'], value: true });
    // the rows that counted: the first of grace's, and linus's approval
    expect(done.wait?.evidence?.terms[0].signal_ids).toHaveLength(2);
  });

  it('count from the inputs: one approver is a quorum of one; no approvers is an invalid-inputs error at start', async () => {
    const rt = await drivenRuntime({ definitions: { approval: APPROVAL }, handlers: { decide: async () => ({ ok: true }) } });
    await rt.startWorker();
    const id = await rt.start('approval', { approvers: ['grace'] });
    await rt.workflow(id).signals.emit('approval', { approved: true, approver: 'grace' });
    await settle(rt);
    expect((await rt.workflow(id).task('decide')).state).toBe('completed');
    await expect(rt.start('approval', { approvers: [] })).rejects.toMatchObject({
      code: 'inputs_invalid',
      diagnostics: [
        expect.objectContaining({ rule: 'invalid-inputs', message: expect.stringContaining('count yielded number 0, not an integer from 1 to 100000') }),
      ],
    });
  });
});
