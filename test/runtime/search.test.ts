import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { WorkflowSearch } from '../../src/runtime/wire/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, drivenRuntime, final, postgresUrl } from '../helpers/runtime.js';

// The workflow list searched as an operator does: by business-key prefix, an inputs value, time ranges, error
// text, the top level only or one parent's children; through the runtime, the API and the CLI's reading.
const REFUND = `name: refund
inputs:
  type: object
  properties:
    customer_id: { type: string }
    amount: { type: number }
    customer: { type: object, properties: { tier: { type: string } } }
tasks:
  pay: { kind: pay, max_attempts: 1, args: { amount: "\${{ inputs.amount }}" } }
`;

const BATCH = `name: batch
tasks:
  fan:
    start: { workflow: refund, group: refunds, for_each: '\${{ [1, 2] }}', inputs: { customer_id: "child", amount: "\${{ item }}" } }
`;

async function setup(): Promise<{ rt: Runtime; ids: Record<string, string> }> {
  const rt = await drivenRuntime({
    definitions: { refund: REFUND, batch: BATCH },
    handlers: {
      pay: async (args: { amount: number }) => {
        if (args.amount > 1000) throw new Error('Card DECLINED by the issuer');
        return { paid: args.amount };
      },
    },
  });
  await rt.startWorker();
  const ids: Record<string, string> = {};
  ids.r1 = await rt.start('refund', { customer_id: 'c1', amount: 10, customer: { tier: 'gold' } }, { id: 'refund:r1' });
  ids.r10 = await rt.start('refund', { customer_id: 'c2', amount: 5000 }, { id: 'refund:r10' });
  ids.r2 = await rt.start('refund', { customer_id: 'c1', amount: 42 }, { id: 'refund:r2' });
  ids.batch = await rt.start('batch');
  for (const id of Object.values(ids)) await final(rt, id);
  await rt.maintenance();
  return { rt, ids };
}

const names = async (rt: Runtime, f: WorkflowSearch) => (await rt.listWorkflows(f)).workflows.map((w) => w.id).sort();

describe(`searching the workflow list (${backend})`, () => {
  it('by id prefix, inputs values, error text, top level and parent, each with the others', async () => {
    const { rt, ids } = await setup();
    expect(await names(rt, { idPrefix: 'refund:r1' })).toEqual(['refund:r1', 'refund:r10']);
    // LIKE's wildcards in a prefix are matched as written
    expect(await names(rt, { idPrefix: 'refund_r' })).toEqual([]);
    expect(await names(rt, { inputs: [{ path: 'customer_id', value: 'c1' }] })).toEqual(['refund:r1', 'refund:r2']);
    expect(await names(rt, { inputs: [{ path: 'customer.tier', value: 'gold' }] })).toEqual(['refund:r1']);
    // a value that is JSON matches the JSON value too: amount 42 is a number
    expect(await names(rt, { inputs: [{ path: 'amount', value: '42' }] })).toEqual(['refund:r2']);
    expect(await names(rt, { inputs: [{ path: 'customer_id', value: 'c1' }], idPrefix: 'refund:r2' })).toEqual(['refund:r2']);
    expect(await names(rt, { error: 'card declined' })).toEqual(['refund:r10']);
    expect(await names(rt, { error: 'declined', state: 'completed' })).toEqual([]);
    const children = await names(rt, { parentId: ids.batch });
    expect(children).toHaveLength(2);
    expect(await names(rt, { topLevel: true })).toEqual([ids.batch, 'refund:r1', 'refund:r10', 'refund:r2'].sort());
    expect(await names(rt, { topLevel: true, name: 'refund', state: 'failed' })).toEqual(['refund:r10']);
    const all = (await rt.listWorkflows({})).workflows;
    const newest = all[0].created_at;
    expect(await names(rt, { createdAfter: new Date(new Date(newest).getTime() + 1).toISOString() })).toEqual([]);
    expect((await names(rt, { createdBefore: new Date(new Date(newest).getTime() + 1).toISOString() })).length).toBe(all.length);
    expect((await names(rt, { finalizedAfter: '2000-01-01' })).length).toBe(all.length);
    // paged: the pages together are the whole list, newest first
    const first = await rt.listWorkflows({ topLevel: true, limit: 3 });
    const second = await rt.listWorkflows({ topLevel: true, limit: 3, cursor: first.next_cursor! });
    expect([...first.workflows, ...second.workflows].map((w) => w.id).sort()).toEqual([ids.batch, 'refund:r1', 'refund:r10', 'refund:r2'].sort());
  });

  it('through the API (the query the CLI and the UI send), which refuses what it cannot read', async () => {
    const { rt } = await setup();
    const server = await startApiServer(rt, { token: 't' });
    try {
      const api = new ApiClient(server.url, 't');
      const page = await api.list({ idPrefix: 'refund:r', inputs: [{ path: 'customer_id', value: 'c1' }], topLevel: true });
      expect(page.workflows.map((w) => w.id).sort()).toEqual(['refund:r1', 'refund:r2']);
      const get = (q: string) => fetch(`${server.url}/api/workflows?${q}`, { headers: { authorization: 'Bearer t' } });
      for (const bad of ['created_after=yesterday', 'input=no-equals', 'input=a..b=1', 'top_level=maybe', `error=${'x'.repeat(300)}`]) {
        const r = await get(bad);
        expect(r.status, bad).toBe(400);
        expect(((await r.json()) as { error: string }).error).toMatch(/created_after|input filter|top_level|error/);
      }
    } finally {
      await server.close();
    }
  });

  it('through braid list: the same filters as flags, a parent column when children are listed', async () => {
    const bad = (args: string[]) => runCliInProcess(['list', ...args], { env: { DATABASE_URL: 'postgres://127.0.0.1:1/none' } });
    expect((await bad(['--created-after', 'yesterday'])).stderr).toBe(
      'braid: --created-after is an ISO 8601 date or time, such as 2026-01-31 or 2026-01-31T12:00:00Z\n',
    );
    expect(await bad(['--input', 'customer_id'])).toMatchObject({ code: 2, stderr: expect.stringContaining('an input filter is PATH=VALUE') });
    if (backend !== 'postgres') return;
    const { rt, ids } = await setup();
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const list = await runCliInProcess(['list', '--id-prefix', 'refund:r', '--input', 'customer_id=c1', '--top-level', ...db], { env: {} });
    expect(list.stdout).toMatch(
      /^ID +NAME +STATE +DONE +CREATED\nrefund:r2 +refund +completed +1\/1 +\d{4}-.*\nrefund:r1 +refund +completed +1\/1 +\d{4}-.*\n$/,
    );
    const children = await runCliInProcess(['list', '--parent', ids.batch, '--error', 'nothing like it', ...db], { env: {} });
    expect(children.stdout).toBe('no workflows\n');
    const all = await runCliInProcess(['list', '--name', 'refund', '--limit', '10', ...db], { env: {} });
    expect(all.stdout.split('\n')[0]).toMatch(/^ID +NAME +STATE +DONE +PARENT +CREATED$/);
    expect(all.stdout).toContain(` ${ids.batch} `);
  });
});
