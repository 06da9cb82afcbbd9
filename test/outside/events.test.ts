import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import type { Runtime } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, definitionsDir, postgresUrl, testRuntime } from '../helpers/runtime.js';

const EVENTS = {
  'order.created': {
    schema: {
      type: 'object',
      properties: { order_id: { type: 'string' }, amount: { type: 'number' }, region: { type: 'string' } },
      required: ['order_id', 'amount'],
    },
  },
  'payment.settled': { schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } },
  'push.github': { schema: { type: 'object' } },
};

const FULFIL = `name: fulfil
inputs: { type: object, properties: { order: { type: string } }, required: [order] }
triggers:
  - event: order.created
    id: '"fulfil-" + event.payload.order_id'
    inputs: { order: "\${{ event.payload.order_id }}" }
tasks:
  pick: { kind: work }
`;

const REVIEW = `name: review
inputs: { type: object, properties: { order: { type: string }, amount: { type: number } }, required: [order, amount] }
triggers:
  - event: order.created
    where: event.payload.amount > 100.0
    inputs: { order: "\${{ event.payload.order_id }}", amount: "\${{ event.payload.amount }}" }
tasks:
  look: { kind: work }
`;

/** Needs an integer where the event has a string: its trigger fails on every event, and stops no other. */
const BROKEN = `name: broken
inputs: { type: object, properties: { n: { type: integer } }, required: [n] }
triggers:
  - event: order.created
    inputs: { n: "\${{ event.payload.order_id }}" }
tasks:
  t: { kind: work }
`;

async function eventsRuntime(defs: Record<string, string> = { fulfil: FULFIL, review: REVIEW }): Promise<Runtime> {
  const rt = await testRuntime({ handlers: { work: async () => ({}) } });
  const r = await rt.registerDefinitions(definitionsDir(defs), { events: EVENTS });
  expect(r.validation.diagnostics).toEqual([]);
  return rt;
}

const runsOf = async (rt: Runtime, name: string) => (await rt.listWorkflows({ name })).workflows.map((w) => w.id);

describe(`events that start workflows (${backend})`, () => {
  it('an event matching two definitions starts both in the caller transaction; a rollback starts nothing; the same event id again starts nothing', async () => {
    const rt = await eventsRuntime();
    const payload = { order_id: 'o-1', amount: 250 };
    await expect(
      rt.db.transaction(async (tx) => {
        const r = await rt.emit('order.created', payload, { tx, id: 'evt-1' });
        expect(r.event.outcomes.map((o) => o.outcome)).toEqual(['started', 'started']);
        throw new Error('the caller changes its mind');
      }),
    ).rejects.toThrow('changes its mind');
    expect(await runsOf(rt, 'fulfil')).toEqual([]);
    expect(await runsOf(rt, 'review')).toEqual([]);
    expect(await rt.events.list()).toEqual([]);

    const r = await rt.db.transaction((tx) => rt.emit('order.created', payload, { tx, id: 'evt-1' }));
    expect(r.duplicate).toBe(false);
    expect(r.event.outcomes).toEqual([
      { workflow: 'fulfil', trigger: 0, outcome: 'started', id: 'fulfil-o-1' },
      { workflow: 'review', trigger: 0, outcome: 'started', id: 'review:order.created:evt-1' },
    ]);
    expect((await rt.workflow('fulfil-o-1').load()).inputs).toEqual({ order: 'o-1' });
    expect((await rt.workflow('review:order.created:evt-1').load()).inputs).toEqual({ order: 'o-1', amount: 250 });
    expect(await rt.events.startedBy('fulfil-o-1')).toMatchObject({ name: 'order.created', event_id: 'evt-1' });

    const again = await rt.emit('order.created', payload, { id: 'evt-1' });
    expect(again).toMatchObject({ duplicate: true, event: { event_id: 'evt-1' } });
    expect(await runsOf(rt, 'fulfil')).toHaveLength(1);
    expect(await runsOf(rt, 'review')).toHaveLength(1);

    // another event for the same order: fulfil's business key already has its run; review's where is false
    const small = await rt.emit('order.created', { order_id: 'o-1', amount: 5 });
    expect(small.event.outcomes).toEqual([
      { workflow: 'fulfil', trigger: 0, outcome: 'existing', id: 'fulfil-o-1' },
      { workflow: 'review', trigger: 0, outcome: 'not_matched' },
    ]);
    expect((await rt.events.list({ name: 'order.created' })).map((e) => e.event_id)).toEqual([small.event.event_id, 'evt-1']);
  });

  it('a payload its schema refuses records nothing; a trigger that fails is an outcome and stops no other', async () => {
    const rt = await eventsRuntime({ fulfil: FULFIL, broken: BROKEN });
    await expect(rt.emit('order.created', { order_id: 7 })).rejects.toMatchObject({ code: 'event_invalid', message: expect.stringContaining('/order_id') });
    await expect(rt.emit('no such name!', {})).rejects.toMatchObject({ code: 'event_invalid' });
    expect(await rt.events.list()).toEqual([]);
    const r = await rt.emit('order.created', { order_id: 'o-2', amount: 1 });
    expect(r.event.outcomes).toEqual([
      { workflow: 'broken', trigger: 0, outcome: 'failed', error: expect.stringContaining('n') },
      { workflow: 'fulfil', trigger: 0, outcome: 'started', id: 'fulfil-o-2' },
    ]);
    expect(await runsOf(rt, 'broken')).toEqual([]);
    // an event no workflow is triggered by is recorded, and starts nothing
    expect((await rt.emit('payment.settled', { order_id: 'o-2' })).event.outcomes).toEqual([]);
  });

  it('over HTTP: POST /api/events; a signed webhook with a bad signature is refused 401 and recorded nowhere; a good one needs no token', async () => {
    const rt = await eventsRuntime();
    process.env.BRAID_TEST_WEBHOOK_SECRET = 'whsec-0123456789';
    const server = await startApiServer(rt, {
      token: 'tok-tok-tok-tok-1',
      eventSignatures: { 'payment.settled': { header: 'X-Signature', secret_env: 'BRAID_TEST_WEBHOOK_SECRET', prefix: 'sha256=' } },
    });
    try {
      const post = (path: string, body: string, headers: Record<string, string>) =>
        fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      const bearer = { authorization: 'Bearer tok-tok-tok-tok-1' };
      const created = await post('/api/events', JSON.stringify({ name: 'order.created', payload: { order_id: 'h-1', amount: 9 }, id: 'e-h1' }), bearer);
      expect(created.status).toBe(201);
      expect(((await created.json()) as { event: { outcomes: unknown[] } }).event.outcomes).toHaveLength(2);
      expect((await post('/api/events', JSON.stringify({ name: 'order.created', payload: { order_id: 'h-1', amount: 9 }, id: 'e-h1' }), bearer)).status).toBe(
        200,
      );
      expect((await post('/api/events', JSON.stringify({ name: 'order.created', payload: {} }), {})).status).toBe(401);

      const body = JSON.stringify({ order_id: 'h-1' });
      const sign = (text: string) => `sha256=${createHmac('sha256', 'whsec-0123456789').update(text).digest('hex')}`;
      expect((await post('/api/events/payment.settled?id=p-1', body, { 'x-signature': sign(`${body} `) })).status).toBe(401);
      expect((await post('/api/events/payment.settled?id=p-1', body, {})).status).toBe(401);
      expect((await rt.events.list({ name: 'payment.settled' })).length).toBe(0);
      const signed = await post('/api/events/payment.settled?id=p-1', body, { 'x-signature': sign(body) });
      expect(signed.status).toBe(201);
      expect((await rt.events.list({ name: 'payment.settled' })).map((e) => e.event_id)).toEqual(['p-1']);
      // an unsigned event's own route still takes the token
      expect((await post('/api/events/order.created', JSON.stringify({ order_id: 'h-2', amount: 1 }), bearer)).status).toBe(201);
      const listed = await fetch(`${server.url}/api/events/recent?limit=2`, { headers: bearer });
      expect(((await listed.json()) as { events: { name: string }[] }).events.map((e) => e.name)).toEqual(['order.created', 'payment.settled']);
      const link = await fetch(`${server.url}/api/workflows/fulfil-h-1/event`, { headers: bearer });
      expect(await link.json()).toMatchObject({ event: { name: 'order.created', event_id: 'e-h1' } });
    } finally {
      await server.close();
    }
  });

  it('a webhook signed by braid, Stripe or GitHub is taken once: the same signed request again is 409 event_replayed with nothing recorded', async () => {
    const rt = await eventsRuntime();
    const secret = 'whsec-replay-0123456789';
    process.env.BRAID_TEST_REPLAY_SECRET = secret;
    const server = await startApiServer(rt, {
      token: 'tok-tok-tok-tok-1',
      eventSignatures: {
        'order.created': { scheme: 'stripe', secret_env: 'BRAID_TEST_REPLAY_SECRET' },
        'payment.settled': { secret_env: 'BRAID_TEST_REPLAY_SECRET', tolerance: '2m' },
        'push.github': { scheme: 'github', secret_env: 'BRAID_TEST_REPLAY_SECRET' },
      },
    });
    try {
      const post = (name: string, body: string, headers: Record<string, string>) =>
        fetch(`${server.url}/api/events/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      const hmac = (text: string) => createHmac('sha256', secret).update(text).digest('hex');
      const t = Math.floor(Date.now() / 1000);
      // Stripe-Signature, and braid-signature (the default scheme): t=,v1= over t.body; without an id, as Stripe sends them
      const order = JSON.stringify({ order_id: 'r-1', amount: 500 });
      const stripe = { 'stripe-signature': `t=${t},v1=${hmac(`${t}.${order}`)}` };
      const first = await post('order.created', order, stripe);
      expect(first.status).toBe(201);
      const replayed = await post('order.created', order, stripe);
      expect(replayed.status).toBe(409);
      expect(await replayed.json()).toMatchObject({ code: 'event_replayed' });
      expect((await rt.events.list({ name: 'order.created' })).length).toBe(1);
      expect(await runsOf(rt, 'fulfil')).toEqual(['fulfil-r-1']);
      // the same body signed again at another time is another delivery; a stale timestamp is refused
      const later = t + 1;
      expect((await post('order.created', order, { 'stripe-signature': `t=${later},v1=${hmac(`${later}.${order}`)}` })).status).toBe(201);
      const stale = t - 600;
      const old = await post('order.created', order, { 'stripe-signature': `t=${stale},v1=${hmac(`${stale}.${order}`)}` });
      expect(old.status).toBe(401);
      expect(await old.json()).toMatchObject({ error: expect.stringContaining('from now') });
      const settled = JSON.stringify({ order_id: 'r-1' });
      const braid = { 'braid-signature': `t=${t},v1=${hmac(`${t}.${settled}`)}` };
      expect((await post('payment.settled', settled, braid)).status).toBe(201);
      expect((await post('payment.settled', settled, braid)).status).toBe(409);
      expect((await post('payment.settled', settled, { 'braid-signature': `t=${t},v1=${hmac(`${t}.{}`)}` })).status).toBe(401);
      // X-Hub-Signature-256: no timestamp; its signature is remembered for the tolerance window all the same
      const push = JSON.stringify({ ref: 'main' });
      const github = { 'x-hub-signature-256': `sha256=${hmac(push)}` };
      expect((await post('push.github', push, github)).status).toBe(201);
      expect((await post('push.github', push, github)).status).toBe(409);
      expect((await rt.events.list({ name: 'push.github' })).length).toBe(1);
      expect((await rt.events.list({ name: 'payment.settled' })).length).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("a change to the config's events: reaches a running server: a new signed event is taken on its signature, not refused for a token", async () => {
    const rt = await eventsRuntime();
    process.env.BRAID_TEST_LIVE_SECRET = 'whsec-live-0123456789';
    let signatures: Record<string, { secret_env: string }> = {};
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1', eventSignatures: () => signatures });
    try {
      const body = JSON.stringify({ order_id: 'l-1' });
      const t = Math.floor(Date.now() / 1000);
      const headers = {
        'content-type': 'application/json',
        'braid-signature': `t=${t},v1=${createHmac('sha256', 'whsec-live-0123456789').update(`${t}.${body}`).digest('hex')}`,
      };
      const send = () => fetch(`${server.url}/api/events/payment.settled`, { method: 'POST', headers, body });
      expect((await send()).status).toBe(401);
      signatures = { 'payment.settled': { secret_env: 'BRAID_TEST_LIVE_SECRET' } };
      expect((await send()).status).toBe(201);
    } finally {
      await server.close();
    }
  });

  it('braid emit and braid events', async () => {
    if (backend !== 'postgres') return;
    const rt = await eventsRuntime();
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const r = await runCliInProcess(['emit', 'order.created', '--payload', '{"order_id":"c-1","amount":500}', '--id', 'cli-1', ...db]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('fulfil (trigger 1): started fulfil-c-1');
    const again = await runCliInProcess(['emit', 'order.created', '--payload', '{"order_id":"c-1","amount":500}', '--id', 'cli-1', ...db]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('duplicate');
    const bad = await runCliInProcess(['emit', 'order.created', '--payload', '{"order_id":1}', ...db]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('/order_id');
    const listed = await runCliInProcess(['events', '--name', 'order.created', ...db]);
    expect(listed.stdout).toContain('order.created  cli-1');
    expect(listed.stdout).toContain('review (trigger 1): started review:order.created:cli-1');
  });
});
