import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import { NonRetryableError, OperationInvalidError, type Runtime } from '../../src/index.js';
import { advance, backend, definitionsDir, drivenRuntime, final, settle, until } from '../helpers/runtime.js';

const V1 = 'name: w\ninputs: { type: object, properties: { n: { type: integer } } }\ntasks:\n  a: { kind: a }\n';
const V2 = `${V1}  b: { kind: b, deps: [a] }\n`;

/** `n` workflows of w on its first version, failed (a's handler refuses until `mended`); then version 2 registered. */
async function failedRuns(n: number) {
  let mended = false;
  const rt = await drivenRuntime({
    definitions: { w: V1 },
    handlers: {
      a: async () => {
        if (!mended) throw new NonRetryableError('partner down');
        return {};
      },
      b: async () => ({}),
    },
  });
  await rt.startWorker();
  const ids = (
    await rt.startMany(
      'w',
      Array.from({ length: n }, (_, i) => ({ n: i })),
    )
  ).map((r) => r.id);
  await settle(rt);
  for (const id of ids) expect((await rt.workflow(id).load()).state).toBe('failed');
  await rt.registerDefinitions(definitionsDir({ w: V2 }));
  return { rt, ids, mend: () => (mended = true) };
}

const attempts = async (rt: Runtime, ids: readonly string[]) => Promise.all(ids.map(async (id) => (await rt.workflow(id).load()).attempt));

describe(`bulk operations by filter (${backend})`, () => {
  it('a dry run counts and changes nothing; the run retries every one on the current version; running it again touches none', async () => {
    const { rt, ids, mend } = await failedRuns(20);
    const request = { action: 'retry' as const, filter: { name: 'w', state: 'failed' as const }, name: 'INC-42', options: { on_current: true }, actor: 'ada' };
    const dry = await rt.bulk.create({ ...request, dryRun: true });
    expect(dry).toMatchObject({ name: 'INC-42', total: 20, unevaluated: 0 });
    expect(dry.first_ids).toEqual([...ids].sort().slice(0, 10));
    expect(dry.operation).toBeUndefined();
    expect(await rt.bulk.list()).toEqual([]);
    mend();
    const made = await rt.bulk.create(request);
    expect(made).toMatchObject({ total: 20, existing: false, operation: { state: 'running', total: 20, done: 0, actor: 'ada' } });
    const ran = await rt.bulk.run('INC-42');
    expect(ran).toMatchObject({ state: 'completed', done: 20, failed: 0 });
    for (const id of ids) expect((await final(rt, id)).state).toBe('completed');
    expect(new Set(await attempts(rt, ids))).toEqual(new Set([2]));
    expect((await rt.workflow(ids[0]).tasks()).map((t) => t.name)).toEqual(['a', 'b']);
    expect((await rt.workflow(ids[0]).status()).audit).toMatchObject([{ action: 'bulk.retry', target: 'INC-42', actor: 'ada', detail: { outcome: 'done' } }]);
    // the same request again is the same operation: it acts on nothing new
    const again = await rt.bulk.create(request);
    expect(again).toMatchObject({ existing: true, operation: { state: 'completed', done: 20 } });
    expect(await rt.bulk.run('INC-42')).toMatchObject({ done: 20 });
    expect(new Set(await attempts(rt, ids))).toEqual(new Set([2]));
  });

  it('--where selects by CEL over the workflow record; one that cannot be evaluated is left out and counted', async () => {
    const { rt, ids } = await failedRuns(6);
    const even = await rt.bulk.create({ action: 'cancel', filter: { name: 'w' }, where: 'int(inputs.n) % 2 == 0 && error.contains("partner")', dryRun: true });
    expect(even.total).toBe(3);
    const missing = await rt.bulk.create({ action: 'cancel', filter: { name: 'w' }, where: 'inputs.nope == 1', dryRun: true });
    expect(missing).toMatchObject({ total: 0, unevaluated: 6 });
    expect(missing.first_error).toMatch(/^\S+: /);
    expect(ids).toHaveLength(6);
  });

  it('an operation stopped mid-way is continued by the next run, acting on no workflow twice; a cancel skips the rest', async () => {
    const { rt, ids, mend } = await failedRuns(12);
    mend();
    await rt.bulk.create({ action: 'retry', filter: { state: 'failed' }, name: 'half', options: { mode: 'failed_only' } });
    expect(await rt.bulk.run('half', { maxItems: 5 })).toMatchObject({ state: 'running', done: 5, runner: null });
    expect(await rt.bulk.run('half')).toMatchObject({ state: 'completed', done: 12 });
    await settle(rt);
    expect(new Set(await attempts(rt, ids))).toEqual(new Set([2]));

    const { rt: other } = await failedRuns(6);
    await other.bulk.create({ action: 'cancel', filter: { state: 'failed' }, name: 'stopped' });
    await other.bulk.run('stopped', { maxItems: 2 });
    expect(await other.bulk.cancel('stopped', { actor: 'bob' })).toMatchObject({ state: 'cancelled', done: 2 });
    expect(await other.bulk.run('stopped')).toMatchObject({ state: 'cancelled', done: 2 });
    // a filter that selects nothing makes an operation that is done at once
    expect((await other.bulk.create({ action: 'cancel', filter: { name: 'nothing' }, name: 'empty' })).operation).toMatchObject({
      state: 'completed',
      total: 0,
    });
    expect(await other.bulk.run('empty')).toMatchObject({ state: 'completed', total: 0 });
  });

  it('retention forgets a finished operation after 30 days, and audit lines after a year', async () => {
    const { rt, ids } = await failedRuns(2);
    await rt.bulk.create({ action: 'cancel', filter: { name: 'w' }, name: 'old-op' });
    await rt.bulk.run('old-op');
    await rt.pauses.pause('queue', 'q');
    await advance(rt, 31 * 86_400_000);
    await rt.maintenance({ only: ['deleted'] });
    await expect(rt.bulk.get('old-op')).rejects.toThrow(/no bulk operation named old-op/);
    const lines = async () => (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".audit`)).rows[0].n;
    expect(await lines()).toBeGreaterThan(0);
    await advance(rt, 366 * 86_400_000);
    await rt.maintenance({ only: ['deleted'] });
    expect(await lines()).toBe(0);
    expect(ids).toHaveLength(2);
  });

  it('the leader continues an operation whose runner went silent', async () => {
    const { rt, ids, mend } = await failedRuns(4);
    mend();
    await rt.bulk.create({ action: 'retry', filter: { name: 'w' }, name: 'orphan' });
    // made by this process, then left (as a CLI killed mid-way leaves it): quiet past the stale bound
    expect((await rt.maintenance({ only: ['bulk'] })).bulk).toBe(0);
    await advance(rt, 6000);
    expect((await rt.maintenance({ only: ['bulk'] })).bulk).toBe(4);
    expect(await rt.bulk.get('orphan')).toMatchObject({ state: 'completed', done: 4 });
    for (const id of ids) expect((await final(rt, id)).state).toBe('completed');
  });

  it('refuses what it cannot take, with one clear error each', async () => {
    const { rt } = await failedRuns(1);
    await expect(rt.bulk.create({ action: 'retry', filter: {} })).rejects.toThrow(/needs a filter/);
    await expect(rt.bulk.create({ action: 'explode' as never, filter: { name: 'w' } })).rejects.toThrow(OperationInvalidError);
    await expect(rt.bulk.create({ action: 'retry', filter: { name: 'w' }, where: 'inputs.n ==' })).rejects.toThrow(/--where is not a CEL expression/);
    await expect(rt.bulk.create({ action: 'retry', filter: { name: 'w' }, ratePerS: 0 })).rejects.toThrow(/the rate/);
    await expect(rt.bulk.create({ action: 'retry', filter: { name: 'w' }, name: 'bad name!' })).rejects.toThrow(/an operation's name/);
    await expect(rt.bulk.create({ action: 'signal', filter: { name: 'w' } })).rejects.toThrow(/the signal key is required/);
    await expect(rt.bulk.create({ action: 'retry', filter: { name: 'w' }, options: { mode: 'some' } })).rejects.toThrow(/mode is all/);
    await rt.bulk.create({ action: 'retry', filter: { name: 'w' }, name: 'once' });
    await expect(rt.bulk.create({ action: 'cancel', filter: { name: 'w' }, name: 'once' })).rejects.toThrow(/exists with another action or filter/);
    await expect(rt.bulk.get('never')).rejects.toThrow(/no bulk operation named never/);
  });
});

describe(`bulk operations through the API (${backend})`, () => {
  it('POST /api/bulk previews a dry run, makes and runs an operation (202), and GET follows it to its end; bad filters are 400', async () => {
    const { rt, ids, mend } = await failedRuns(5);
    mend();
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      const api = new ApiClient(server.url, 'tok-tok-tok-tok-1');
      const body = { action: 'retry' as const, filter: { name: 'w', state: 'failed', input: ['n=3'] }, name: 'api-op', actor: 'ops-bot' };
      expect(await api.bulkCreate({ ...body, dry_run: true })).toMatchObject({ total: 1, first_ids: [ids[3]] });
      const made = await api.bulkCreate({ ...body, filter: { name: 'w', state: 'failed' } });
      expect(made).toMatchObject({ total: 5, existing: false, operation: { state: 'running' } });
      await until(async () => (await api.bulkStatus('api-op')).state === 'completed');
      expect(await api.bulkStatus('api-op')).toMatchObject({ done: 5, failed: 0, actor: 'ops-bot' });
      expect((await api.bulkList()).map((o) => o.name)).toEqual(['api-op']);
      await expect(api.bulkCreate({ ...body, filter: { colour: 'red' } })).rejects.toMatchObject({ status: 400 });
      await expect(api.bulkCreate({ ...body, filter: { state: 'asleep' } })).rejects.toMatchObject({ status: 400 });
      await expect(api.bulkStatus('nope')).rejects.toMatchObject({ status: 404, code: 'operation_not_found' });
    } finally {
      await server.close();
    }
    for (const id of ids) expect((await final(rt, id)).state).toBe('completed');
  });

  it('a retry without a mode re-runs what failed, never the completed charge before it: bulk (runtime, HTTP) and POST .../retry', async () => {
    const charged: string[] = [];
    let mended = false;
    const rt = await drivenRuntime({
      definitions: { refund: 'name: refund\ninputs: { type: object }\ntasks:\n  charge: { kind: charge }\n  notify: { kind: notify, deps: [charge] }\n' },
      handlers: {
        charge: async (_a, ctx) => void charged.push(ctx.workflowId),
        notify: async () => {
          if (!mended) throw new NonRetryableError('mail relay down');
          return {};
        },
      },
    });
    await rt.startWorker();
    const ids = (await rt.startMany('refund', [{}, {}, {}, {}])).map((r) => r.id);
    await settle(rt);
    expect(charged.sort()).toEqual([...ids].sort());
    mended = true;
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-2' });
    try {
      const api = new ApiClient(server.url, 'tok-tok-tok-tok-2');
      // one through the runtime, one over HTTP, one workflow by its own route
      await rt.bulk.create({ action: 'retry', filter: { name: 'refund', idPrefix: ids[0] }, name: 'INC-1', actor: 'ada' });
      expect(await rt.bulk.run('INC-1')).toMatchObject({ done: 1, failed: 0 });
      await api.bulkCreate({ action: 'retry', filter: { name: 'refund', state: 'failed', id_prefix: ids[1] }, name: 'INC-2', actor: 'ada' });
      await until(async () => (await api.bulkStatus('INC-2')).state === 'completed');
      expect((await api.retry(ids[2])).retried).toEqual(['notify']);
      // all, asked for by name, re-runs the charge
      expect((await api.retry(ids[3], { mode: 'all' })).retried.sort()).toEqual(['charge', 'notify']);
    } finally {
      await server.close();
    }
    for (const id of ids) expect((await final(rt, id)).state).toBe('completed');
    expect(charged.filter((id) => id !== ids[3]).sort()).toEqual([...ids.slice(0, 3)].sort());
    expect(charged.filter((id) => id === ids[3])).toHaveLength(2);
    // each operation's line records the mode it ran with; each workflow's line names the workflow
    const lines = await rt.auditTrail({ action: 'bulk.retry' });
    expect(lines.filter((l) => l.workflow_id === null).map((l) => l.detail?.options)).toEqual([
      { mode: 'failed_and_downstream', on_current: false, reset_history: false },
      { mode: 'failed_and_downstream', on_current: false, reset_history: false },
    ]);
    expect(
      lines
        .filter((l) => l.workflow_id !== null)
        .map((l) => l.workflow_id)
        .sort(),
    ).toEqual(ids.slice(0, 2).sort());
  });
});
