import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import { NonRetryableError, OutputInvalidError, type Runtime, TaskStateConflictError } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, drivenRuntime, final, postgresUrl, settle, testRuntime } from '../helpers/runtime.js';

const states = async (rt: Runtime, id: string) => Object.fromEntries((await rt.workflow(id).tasks()).map((t) => [t.name, t.state]));
const ok = async () => ({ ok: true });

/** a -> b -> c, a returning { id: string }; a fails at once until `mended` says otherwise. */
const CHAIN = `name: chain
tasks:
  a:
    kind: ka
    returns: { type: object, required: [id], properties: { id: { type: string } } }
  b: { kind: kb, deps: [a], args: { id: "\${{ deps.a.output.id }}" } }
  c: { kind: kc, deps: [b] }
`;

async function failedChain(mended = () => false) {
  const seen: unknown[] = [];
  const rt = await drivenRuntime({
    definitions: { chain: CHAIN },
    handlers: {
      ka: async () => {
        if (!mended()) throw new NonRetryableError('partner said 404', { code: 'not_found' });
        return { id: 'from-handler' };
      },
      kb: async (args) => {
        seen.push(args);
        return { ok: true };
      },
      kc: ok,
    },
  });
  await rt.startWorker();
  const id = await rt.start('chain');
  expect((await final(rt, id)).state).toBe('failed');
  expect(await states(rt, id)).toEqual({ a: 'discarded', b: 'cancelled', c: 'cancelled' });
  return { rt, id, seen };
}

describe(`per-task actions (${backend})`, () => {
  it('complete by hand: an output that breaks returns is refused and changes nothing; a good one reopens the run and its dependents run', async () => {
    const { rt, id, seen } = await failedChain();
    const wf = rt.workflow(id);
    await expect(wf.taskAction('a', 'complete', { output: { id: 42 }, actor: 'ada' })).rejects.toThrow(
      new OutputInvalidError('the output breaks the returns schema of task "a": /id must be string (type)'),
    );
    expect((await wf.load()).state).toBe('failed');
    const done = await wf.taskAction('a', 'complete', { output: { id: 'fixed-by-hand' }, actor: 'ada', reason: 'refunded in the partner console' });
    expect(done).toMatchObject({ task: 'a', action: 'complete', state: 'completed', reopened: ['a', 'b', 'c'], cancelled_attempt: null });
    const w = await final(rt, id);
    expect([w.state, w.attempt]).toEqual(['completed', 2]);
    expect(seen).toEqual([{ id: 'fixed-by-hand' }]);
    const a = await wf.task('a');
    expect([a.output, a.completed_by]).toEqual([{ id: 'fixed-by-hand' }, 'operator ada']);
    const status = await wf.status();
    expect(status.audit).toMatchObject([
      { action: 'task.complete', actor: 'ada', task: 'a', reason: 'refunded in the partner console', detail: { forced: false, reopened: ['a', 'b', 'c'] } },
    ]);
    await expect(wf.taskAction('a', 'skip')).rejects.toThrow(TaskStateConflictError);
  });

  it('--dry-run says what would run, be skipped or fail after it, and changes nothing (runtime, HTTP, CLI)', async () => {
    const { rt, id } = await failedChain();
    const wf = rt.workflow(id);
    const preview = await wf.taskAction('a', 'complete', { output: { id: 'x' }, actor: 'ada', dryRun: true });
    expect(preview).toMatchObject({
      state: 'completed',
      reopened: ['a', 'b', 'c'],
      preview: { run: ['b', 'c'], skipped: [], failed: [], workflow_state: 'running' },
    });
    const skip = await wf.taskAction('a', 'skip', { actor: 'ada', dryRun: true });
    expect(skip.preview).toMatchObject({ skipped: ['b', 'c'], workflow_state: 'completed' });
    // nothing changed, nothing audited
    expect(await states(rt, id)).toEqual({ a: 'discarded', b: 'cancelled', c: 'cancelled' });
    expect((await wf.status()).audit).toEqual([]);
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-9' });
    try {
      const api = new ApiClient(server.url, 'tok-tok-tok-tok-9');
      expect((await api.taskAction(id, 'a', 'complete', { output: { id: 'x' }, dry_run: true })).preview).toEqual(preview.preview);
      await expect(api.taskAction(id, 'a', 'skip', { dry_run: 'yes' as never })).rejects.toMatchObject({ status: 400 });
    } finally {
      await server.close();
    }
    expect(await states(rt, id)).toEqual({ a: 'discarded', b: 'cancelled', c: 'cancelled' });
    if (backend === 'postgres') {
      const cli = await runCliInProcess(['task', 'skip', id, 'a', '--dry-run', '--database', postgresUrl, '--schema', rt.schema]);
      expect(cli.stdout).toBe(
        `dry run, nothing changed: task a of ${id}: would be skipped (opened again: a, b, c)\n` +
          '  would run: none\n  would be skipped: b, c\n  would end failed: none\n  the workflow would be completed\n',
      );
      expect(await states(rt, id)).toEqual({ a: 'discarded', b: 'cancelled', c: 'cancelled' });
    }
  });

  it('retry opens a failed task again with what it cancelled downstream; the run goes on', async () => {
    let mended = false;
    const { rt, id } = await failedChain(() => mended);
    mended = true;
    const r = await rt.workflow(id).taskAction('a', 'retry', { actor: 'bob' });
    expect(r).toMatchObject({ state: 'available', reopened: ['a', 'b', 'c'] });
    expect((await final(rt, id)).state).toBe('completed');
    expect((await rt.workflow(id).task('a')).attempt).toBe(2);
  });

  it("skip ends an open task: a dependent that ignores skipped deps runs, one that does not is skipped; a waiting task's wait ends", async () => {
    const def = `name: gate
tasks:
  wait_for_ok:
    kind: k
    wait: { expr: ok, signals: [ok], terms: { ok: { signal: ok } } }
  joined: { kind: k, deps: [wait_for_ok], ignore_skipped_deps: true }
  strict: { kind: k, deps: [wait_for_ok] }
`;
    const rt = await drivenRuntime({ definitions: { gate: def }, handlers: { k: ok } });
    await rt.startWorker();
    const id = await rt.start('gate');
    await settle(rt);
    expect((await states(rt, id)).wait_for_ok).toBe('pending');
    const r = await rt.workflow(id).taskAction('wait_for_ok', 'skip', { reason: 'approved by phone' });
    expect(r).toMatchObject({ state: 'skipped', reopened: [] });
    expect((await final(rt, id)).state).toBe('completed');
    expect(await states(rt, id)).toEqual({ wait_for_ok: 'skipped', joined: 'completed', strict: 'skipped' });
  });

  it('refuses what does not apply, saying what would', async () => {
    const { rt, id } = await failedChain();
    const wf = rt.workflow(id);
    await expect(wf.taskAction('nope', 'retry')).rejects.toThrow('has no task "nope"');
    await expect(rt.workflow('no-such-run').taskAction('a', 'retry')).rejects.toThrow('no-such-run');
    await expect(wf.taskAction('a', 'complete', { output: { id: 'x\u0000' } })).rejects.toThrow(/the output/);
    await expect(wf.taskAction('a', 'complete', { output: { id: 'x' }, reason: 'r'.repeat(3000) })).rejects.toThrow(/at most 2000/);
    expect((await wf.load()).state).toBe('failed');
  });
});

describe(`forcing an action on a running task (${backend})`, () => {
  it('without --force a running task is refused; with it, its attempt is cancelled (the handler aborted) and the task completes by hand', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let aborted: unknown;
    const rt = await testRuntime({
      definitions: { slow: 'name: slow\ntasks:\n  a: { kind: slow }\n  b: { kind: k, deps: [a] }\n' },
      handlers: {
        slow: (_args, ctx) =>
          new Promise((_resolve, reject) => {
            started();
            ctx.signal.addEventListener('abort', () => {
              aborted = ctx.signal.reason;
              reject(ctx.signal.reason);
            });
          }),
        k: ok,
      },
    });
    await rt.startWorker();
    const id = await rt.start('slow');
    await running;
    await expect(rt.workflow(id).taskAction('a', 'complete', { output: {} })).rejects.toThrow(
      new TaskStateConflictError('task "a" is running: --force cancels its attempt first (force: true in the API)'),
    );
    const r = await rt.workflow(id).taskAction('a', 'complete', { output: { by: 'hand' }, force: true, actor: 'ada' });
    expect(r).toMatchObject({ state: 'completed', cancelled_attempt: 1 });
    expect((await final(rt, id)).state).toBe('completed');
    expect(String(aborted)).toMatch(/attempt cancelled/);
    const a = await rt.workflow(id).task('a');
    expect(a.attempt).toBe(2);
    expect(a.errors).toMatchObject([{ attempt: 1, kind: 'cancel', message: 'attempt cancelled by ada (braid task complete)' }]);
  });
});

describe(`per-task actions through the API and the CLI (${backend})`, () => {
  it('the API refuses an output that breaks returns (422 output_invalid) and a running task without force (409); a good output completes it', async () => {
    const { rt, id } = await failedChain();
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      const api = new ApiClient(server.url, 'tok-tok-tok-tok-1');
      await expect(api.taskAction(id, 'a', 'complete', { output: { id: 1 } })).rejects.toMatchObject({ status: 422, code: 'output_invalid' });
      await expect(api.taskAction(id, 'zz', 'skip', {})).rejects.toMatchObject({ status: 404, code: 'task_not_found' });
      const r = await api.taskAction(id, 'a', 'complete', { output: { id: 'api' }, actor: 'ops-bot', reason: 'INC-42' });
      expect(r).toMatchObject({ state: 'completed', reopened: ['a', 'b', 'c'] });
      expect((await final(rt, id)).state).toBe('completed');
      await expect(api.taskAction(id, 'a', 'retry', {})).rejects.toMatchObject({ status: 409, code: 'task_state_conflict' });
      expect((await api.status(id)).audit).toMatchObject([{ action: 'task.complete', actor: 'ops-bot', reason: 'INC-42' }]);
    } finally {
      await server.close();
    }
  });

  it.runIf(backend === 'postgres')(
    'braid task complete refuses a bad output (exit 1), completes with a good one, and status shows the audit line',
    async () => {
      const { rt, id } = await failedChain();
      const db = ['--database', postgresUrl, '--schema', rt.schema];
      const bad = await runCliInProcess(['task', 'complete', id, 'a', '--output', '{"id":7}', ...db]);
      expect([bad.code, bad.stderr.trim()]).toEqual([1, 'the output breaks the returns schema of task "a": /id must be string (type)']);
      const good = await runCliInProcess(['task', 'complete', id, 'a', '--output', '{"id":"cli"}', '--reason', 'fixed upstream', ...db], {
        env: { BRAID_ACTOR: 'ada' },
      });
      expect(good.stdout).toBe(`task a of ${id}: completed by hand (opened again: a, b, c)\n`);
      expect((await final(rt, id)).state).toBe('completed');
      const shown = await runCliInProcess(['status', id, ...db]);
      expect(shown.stdout).toMatch(/^\S+Z {2}task\.complete a by ada: "fixed upstream"$/m);
      const usage = await runCliInProcess(['task', 'mend', id, 'a', ...db]);
      expect(usage.code).toBe(2);
    },
  );
});
