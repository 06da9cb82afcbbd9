import { describe, expect, it } from 'vitest';
import { WorkflowNotFoundError } from '../../src/runtime/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { SignalAttemptMismatchError, SignalPayloadMismatchError, UndeclaredSignalKeyError } from '../../src/runtime/waits/signals.js';
import { backend, drivenRuntime, final, settled } from '../helpers/runtime.js';

const approval = `name: approval
tasks:
  decide:
    kind: step
    wait:
      expr: approved
      signals: [note]
      terms:
        approved: { signal: approval, where: 'payload.ok == true' }
        noted: { expr: 'size(signals["note"]) > 100' }
`;

async function started(rt: Runtime): Promise<string> {
  const id = await rt.start('approval');
  await settled(rt, async () => (await rt.workflow(id).task('decide')).wait?.phase === 'waiting');
  return id;
}

describe(`signals: idempotency, attempts and reads (${backend})`, () => {
  it('replaying an idempotency key with the same payload returns the original row and its source', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    const first = await h.signals.emit('approval', { ok: false, n: 1 }, { idempotencyKey: 'req-1', source: { actor: 'webhook' } });
    const again = await h.signals.emit('approval', { n: 1, ok: false }, { idempotencyKey: 'req-1', source: { actor: 'retry' } });
    expect(again.replayed).toBe(true);
    expect(again.signal).toEqual(first.signal);
    expect(again.signal.source).toEqual({ actor: 'webhook' });
    expect((await h.signals.list()).signals).toHaveLength(1);
    // the same idempotency key under another signal key is another row
    const other = await h.signals.emit('note', { ok: false, n: 1 }, { idempotencyKey: 'req-1' });
    expect(other.replayed).toBe(false);
  });

  it('a different payload under a used idempotency key is SignalPayloadMismatchError, and nothing is written', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    await h.signals.emit('approval', { ok: false }, { idempotencyKey: 'k' });
    const error = await h.signals.emit('approval', { ok: true }, { idempotencyKey: 'k' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SignalPayloadMismatchError);
    expect((error as Error).name).toBe('SignalPayloadMismatchError');
    expect((await h.signals.list()).signals).toHaveLength(1);
    expect((await h.task('decide')).state).toBe('pending');
  });

  it('a signal meant for another attempt is rejected; the current attempt is accepted', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    await expect(h.signals.emit('approval', { ok: true }, { attempt: 2 })).rejects.toBeInstanceOf(SignalAttemptMismatchError);
    expect((await h.signals.list()).signals).toHaveLength(0);
    const ok = await h.signals.emit('approval', { ok: true }, { attempt: 1 });
    expect(ok.resolved).toEqual(['decide']);
  });

  it('rejects bad input and unknown workflows with clear errors', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    await expect(h.signals.emit('', {})).rejects.toThrow(/non-empty string/);
    await expect(h.signals.emit('k'.repeat(201), {})).rejects.toThrow(/at most 200/);
    await expect(h.signals.emit('approval', { n: 10n })).rejects.toThrow(/not JSON/);
    await expect(h.signals.emit('approval', 'x'.repeat(1024 * 1024 + 1))).rejects.toThrow(/over 1048576 bytes/);
    await expect(rt.workflow('nope').signals.emit('approval', {})).rejects.toBeInstanceOf(WorkflowNotFoundError);
    await expect(rt.workflow('nope').signals.list()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  it('the workflow-wide list pages by cursor and filters by attempt and key', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    for (let i = 0; i < 5; i++) await h.signals.emit('note', { i });
    const p1 = await h.signals.list({ limit: 2 });
    expect(p1.signals.map((s) => (s.payload as { i: number }).i)).toEqual([0, 1]);
    expect(p1.has_more).toBe(true);
    const p2 = await h.signals.list({ limit: 2, cursorId: p1.next_cursor_id! });
    const p3 = await h.signals.list({ limit: 2, cursorId: p2.next_cursor_id! });
    expect(p3.signals.map((s) => (s.payload as { i: number }).i)).toEqual([4]);
    expect(p3).toMatchObject({ has_more: false, next_cursor_id: null });
    expect((await h.signals.list({ attempt: 2 })).signals).toEqual([]);
    expect((await h.signals.list({ key: 'approval' })).signals).toEqual([]);
  });

  it('signals are read in the order they were stored, past 9 and 10 (ids order as numbers, not as their text)', async () => {
    const ordered = `name: ordered
tasks:
  decide:
    kind: step
    wait:
      expr: twelfth
      signals: [note]
      terms:
        twelfth: { expr: 'size(signals["note"]) == 12 && signals["note"][11].payload.i == 11 && signals["note"][9].payload.i == 9' }
`;
    const rt = await drivenRuntime({ definitions: { ordered } });
    const id = await rt.start('ordered');
    const h = rt.workflow(id);
    await settled(rt, async () => (await h.task('decide')).wait?.phase === 'waiting');
    for (let i = 0; i < 12; i++) await h.signals.emit('note', { i });
    const page = await h.signals.list({ limit: 11 });
    expect(page.signals.map((x) => (x.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect((await h.signals.list({ cursorId: page.next_cursor_id! })).signals.map((x) => (x.payload as { i: number }).i)).toEqual([11]);
    // evaluated from scratch, the wait reads them in order too
    expect((await h.waitDiagnostics('decide')).terms.find((t) => t.name === 'twelfth')?.value).toBe(true);
  });

  it('task-scoped reads expose only declared keys and stop at the evidence boundary unless asked', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    await h.signals.emit('approval', { ok: false });
    // a key no task waits on is refused (most likely a typo) unless sent on purpose
    await expect(h.signals.emit('aproval', { x: 1 })).rejects.toMatchObject({
      code: 'signal_key_unknown',
      message: expect.stringContaining('(did you mean "approval"?)'),
    });
    await h.signals.emit('undeclared', { x: 1 }, { anyKey: true });
    const resolving = await h.signals.emit('approval', { ok: true });
    expect(resolving.resolved).toEqual(['decide']);
    const late = await h.signals.emit('approval', { ok: true, late: true });
    await expect(h.signals.latestForTask('decide', 'undeclared')).rejects.toBeInstanceOf(UndeclaredSignalKeyError);
    expect((await h.signals.latestForTask('decide', 'approval'))!.id).toBe(resolving.signal.id);
    expect((await h.signals.latestForTask('decide', 'approval', { includeAfterResolution: true }))!.id).toBe(late.signal.id);
    const visible = await h.signals.listForTask('decide');
    expect(visible.signals.map((s) => s.key)).toEqual(['approval', 'approval']);
    expect((await h.signals.listForTask('decide', { includeAfterResolution: true })).signals).toHaveLength(3);
    expect((await h.signals.list()).signals).toHaveLength(4);
  });

  it('a handler reads the signals that made its task run, through its context', async () => {
    let seen: unknown;
    const rt = await drivenRuntime({
      definitions: { approval },
      handlers: {
        step: async (_args, ctx) => {
          seen = {
            latest: (await ctx.signals.latest('approval'))?.payload,
            all: (await ctx.signals.list()).signals.map((s) => s.payload),
            undeclared: await ctx.signals.latest('nope').catch((e: Error) => e.name),
          };
          return null;
        },
      },
    });
    await rt.startWorker();
    const id = await started(rt);
    await rt.workflow(id).signals.emit('note', { n: 1 });
    await rt.workflow(id).signals.emit('approval', { ok: true, who: 'ann' });
    await final(rt, id);
    expect(seen).toEqual({ latest: { ok: true, who: 'ann' }, all: [{ n: 1 }, { ok: true, who: 'ann' }], undeclared: 'UndeclaredSignalKeyError' });
  });
});

describe(`wait diagnostics (${backend})`, () => {
  it('evaluates live without writing, and says when the scan stopped at the limit', async () => {
    const rt = await drivenRuntime({ definitions: { approval } });
    const id = await started(rt);
    const h = rt.workflow(id);
    const s = `"${rt.schema}"`;
    // 10,001 signals in one statement (emitting them one by one would take minutes and prove nothing more)
    await rt.db.query(
      `INSERT INTO ${s}.signals (workflow_id, attempt, key, payload, created_at)
        SELECT $1, 1, 'note', jsonb_build_object('i', g), now() FROM generate_series(1, 10001) g`,
      [id],
    );
    await h.signals.emit('approval', { ok: false });
    const snapshot = async () =>
      (
        await rt.db.query(
          `SELECT (SELECT json_agg(t ORDER BY name)
            FROM ${s}.tasks t) AS tasks, (SELECT count(*) FROM ${s}.signals) AS signals, (SELECT json_agg(x) FROM ${s}.timers x) AS timers`,
        )
      ).rows[0];
    const before = await snapshot();
    const d = await h.waitDiagnostics('decide');
    expect(await snapshot()).toEqual(before);
    expect(d).toMatchObject({ phase: 'waiting', expr: 'approved', expr_result: false, eval_error: null, truncated: true, signal_scan_limit: 10_000 });
    expect(d.terms.map((t) => [t.name, t.value])).toEqual([
      ['approved', false],
      ['noted', true],
    ]);
    expect(d.signals_scanned).toBe(10_000);
    const wide = await h.waitDiagnostics('decide', { signalScanLimit: 100_000 });
    expect(wide.truncated).toBe(false);
    expect(wide.inputs.signals.note.count).toBe(10_001);
    await expect(h.waitDiagnostics('decide', { signalScanLimit: 100_001 })).rejects.toThrow(/from 1 to 100000/);
    await expect(h.waitDiagnostics('nope')).rejects.toThrow(/has no task "nope"/);
  });
});
