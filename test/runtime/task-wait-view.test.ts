import { describe, expect, it } from 'vitest';
import { evidenceSignalIds, taskWait } from '../../src/runtime/waits/task-wait.js';
import type { SignalRow, WaitEvidence } from '../../src/runtime/wire/index.js';

const row = (id: string, payload: unknown): SignalRow => ({
  id,
  attempt: 1,
  key: 'review',
  payload,
  source: null,
  idempotency_key: null,
  created_at: new Date('2026-01-01T00:00:00Z'),
});

const evidence: WaitEvidence = {
  phase: 'resolved',
  started_at: '2026-01-01T00:00:00.000Z',
  resolved_at: '2026-01-01T00:05:00.000Z',
  expr: 'reviewed || (late && ok)',
  result: true,
  terms: [
    { name: 'reviewed', kind: 'signal', value: true, matched: 2, required: 2, distinct: ['a', 'b'], signal_ids: ['7', '3'] },
    { name: 'late', kind: 'timer', value: false, fire_at: '2026-01-01T01:00:00.000Z', fired: false },
    { name: 'ok', kind: 'expr', value: false, error: 'No such key: ok' },
  ],
  inputs: { signals: { other: ['9'] }, timers: {}, deps: {}, workflows: {} },
  signal_ids: ['3', '7', '9'],
  boundary: '9',
};

describe("a handler's view of its resolved wait (ctx.wait)", () => {
  it("reads only the rows that counted toward signal terms, in the term's order, and says each term's value", () => {
    expect(evidenceSignalIds(evidence)).toEqual(['7', '3']);
    const view = taskWait(evidence, [row('3', { by: 'b' }), row('7', { by: 'a' })]);
    expect(view.satisfied).toEqual(['reviewed']);
    expect(view.startedAt.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(view.resolvedAt.toISOString()).toBe('2026-01-01T00:05:00.000Z');
    expect(view.terms.reviewed).toMatchObject({ kind: 'signal', value: true, matched: 2, required: 2, distinct: ['a', 'b'] });
    expect((view.terms.reviewed as { signals: SignalRow[] }).signals.map((r) => r.payload)).toEqual([{ by: 'a' }, { by: 'b' }]);
    expect(view.terms.late).toEqual({ kind: 'timer', value: false, fireAt: new Date('2026-01-01T01:00:00.000Z') });
    expect(view.terms.ok).toEqual({ kind: 'expr', value: false, error: 'No such key: ok' });
  });

  it('leaves out a row no longer stored rather than inventing one', () => {
    const view = taskWait(evidence, [row('3', { by: 'b' })]);
    expect((view.terms.reviewed as { signals: SignalRow[] }).signals.map((r) => r.id)).toEqual(['3']);
    expect(view.terms.reviewed).toMatchObject({ matched: 2 });
  });
});
