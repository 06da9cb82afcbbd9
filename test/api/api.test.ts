import { request } from 'node:http';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../../src/api/server.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Arrivals } from '../helpers/arrivals.js';
import { normalise } from '../helpers/golden.js';
import { backend, clockOf, definitionsDir, drivenRuntime, final, settle, settled, testRuntime, until } from '../helpers/runtime.js';

const TOKEN = 'a'.repeat(48);

const DEFS = {
  approval: `name: approval
inputs: { type: object, properties: { n: { type: number } } }
tasks:
  prepare: { kind: work, args: { n: "\${{ inputs.n }}" } }
  decide:
    kind: work
    deps: [prepare]
    wait:
      expr: approved
      signals: [approve]
      terms:
        approved: { signal: approve, count: 2, label: Two approvals }
  notify: { kind: work, deps: [decide] }
output: { n: "\${{ inputs.n }}" }
`,
  quick: 'name: quick\ntasks:\n  only: { kind: work }\n',
  doomed: 'name: doomed\ntasks:\n  t: { kind: boom, max_attempts: 1 }\n',
};

let rt: Runtime;
let server: ApiServer;

async function api<T = any>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  // a millisecond on between requests, so that what they start is ordered newest first as in real time
  clockOf(rt).advance(1);
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body !== undefined ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text, headers: res.headers };
}

/** A raw request, for headers fetch will not let a caller set (Host, Origin, Sec-Fetch-Site). */
function raw(method: string, path: string, headers: Record<string, string>, body?: string, base = server.url): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

interface Subscription {
  events: SseEvent[];
  comments: string[];
  /** Resolves once `check()` holds, looked at as each event or comment arrives. */
  when: (check: () => boolean) => Promise<void>;
  close: () => void;
}

/** An EventSource in a few lines: collects events and comments as they arrive. */
function subscribe(path: string, lastEventId?: string): Subscription {
  const url = new URL(server.url);
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const arrivals = new Arrivals<string>();
  const req = request(
    {
      host: url.hostname,
      port: url.port,
      path,
      headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    },
    (res) => {
      let buffer = '';
      res.on('data', (d: Buffer) => {
        buffer += d.toString();
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const e: Partial<SseEvent> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
              comments.push(line.slice(1).trim());
              arrivals.push('comment');
            } else if (line.startsWith('id: ')) e.id = line.slice(4);
            else if (line.startsWith('event: ')) e.event = line.slice(7);
            else if (line.startsWith('data: ')) e.data = JSON.parse(line.slice(6));
          }
          if (e.event) {
            events.push(e as SseEvent);
            arrivals.push(e.event);
          }
        }
      });
    },
  );
  req.on('error', () => undefined);
  req.end();
  return { events, comments, when: (check) => arrivals.when(() => check()), close: () => req.destroy() };
}

const snapshots = (s: { events: SseEvent[] }) => s.events.filter((e) => e.event === 'snapshot');

beforeAll(async () => {
  // driven: the test settles the runtime after each change it makes, rather than waiting in real time
  rt = await drivenRuntime({
    definitions: DEFS,
    handlers: {
      work: async (args: { n?: number }) => ({ done: true, n: args?.n ?? null }),
      boom: async () => {
        throw new Error('boom');
      },
    },
  });
  await rt.startWorker();
  server = await startApiServer(rt, { token: TOKEN, heartbeatMs: 100, pollMs: 60_000, minIntervalMs: 10, listenLingerMs: 300 });
});

afterAll(async () => {
  await server?.close();
});

async function waitingWorkflow(n: number): Promise<string> {
  const { body } = await api('POST', '/api/workflows', { name: 'approval', inputs: { n } });
  await settled(rt, async () => (await rt.workflow(body.id).task('decide')).wait?.phase === 'waiting');
  return body.id;
}

describe(`HTTP API (${backend})`, () => {
  it('each endpoint answers with its JSON shape (golden)', async () => {
    const id = await waitingWorkflow(7);
    const emitted = await api('POST', `/api/workflows/${id}/signals`, { key: 'approve', payload: { by: 'ada' }, idempotency_key: 'k1' });
    expect(emitted.status).toBe(201);
    // the signal is judged in the transaction that stores it
    expect((await rt.workflow(id).task('decide')).wait?.last_evaluation?.terms[0]?.matched).toBe(1);
    const ids = { 'workflow-id': id };
    await expect(normalise(emitted.body, ids)).toMatchFileSnapshot('golden/signal-emit.json');
    await expect(normalise((await api('GET', `/api/workflows/${id}`)).body, ids)).toMatchFileSnapshot('golden/workflow.json');
    await expect(normalise((await api('GET', `/api/workflows/${id}/tasks/decide/signals`)).body, ids)).toMatchFileSnapshot('golden/task-signals.json');
    await expect(normalise((await api('GET', `/api/workflows/${id}/tasks/decide/diagnostics`)).body, ids)).toMatchFileSnapshot('golden/diagnostics.json');
    await expect(normalise((await api('GET', `/api/workflows?name=approval&limit=1`)).body, ids)).toMatchFileSnapshot('golden/workflow-list.json');
    await expect(normalise((await api('GET', '/api/definitions')).body)).toMatchFileSnapshot('golden/definitions.json');
    await expect(normalise((await api('GET', '/api/definitions/quick')).body)).toMatchFileSnapshot('golden/definition.json');
    await expect(normalise((await api('POST', `/api/workflows/${id}/cancel`, {})).body, ids)).toMatchFileSnapshot('golden/cancel.json');
    await final(rt, id);
    await expect(normalise((await api('POST', `/api/workflows/${id}/retry`, { mode: 'all', reset_history: true })).body, ids)).toMatchFileSnapshot(
      'golden/retry.json',
    );
    expect((await api('GET', '/api/dev')).body).toEqual({ definitions: null, handlers: null });
  });

  it('pages the workflow list by cursor, newest first, filtered by state and name', async () => {
    const started: string[] = [];
    for (let i = 0; i < 5; i++) started.push((await api('POST', '/api/workflows', { name: 'quick' })).body.id);
    const doomed = (await api('POST', '/api/workflows', { name: 'doomed' })).body.id;
    await settle(rt);
    expect((await rt.workflow(doomed).load()).state).toBe('failed');
    for (const id of started) expect((await rt.workflow(id).load()).state).toBe('completed');
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { body: { workflows: { id: string; name: string }[]; next_cursor: string | null } } = await api(
        'GET',
        `/api/workflows?name=quick&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.workflows.map((w) => w.id));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...started].reverse());
    const failed = (await api('GET', '/api/workflows?state=failed')).body.workflows;
    expect(failed.map((w: { id: string }) => w.id)).toContain(doomed);
    expect(failed.every((w: { state: string }) => w.state === 'failed')).toBe(true);
    expect(failed.find((w: { id: string }) => w.id === doomed).task_counts).toEqual({ discarded: 1 });
    expect((await api('GET', '/api/workflows?cursor=garbage')).status).toBe(400);
    expect((await api('GET', '/api/workflows?state=sleeping')).status).toBe(400);
    expect((await api('GET', '/api/workflows?limit=-1')).status).toBe(400);
  });

  it("pages a task's signals by cursor, up to the evidence of its resolved wait", async () => {
    const id = await waitingWorkflow(1);
    // in one transaction: the wait resolves at the second, and the workflow is still running for the others
    await rt.db.transaction(async (tx) => {
      for (let i = 0; i < 4; i++) await rt.workflow(id).signals.emit('approve', { i }, { tx });
    });
    const page = async (cursor?: string) => (await api('GET', `/api/workflows/${id}/tasks/decide/signals?limit=1${cursor ? `&cursor_id=${cursor}` : ''}`)).body;
    const first = await page();
    expect(first.signals.map((s: { payload: { i: number } }) => s.payload.i)).toEqual([0]);
    expect(first.has_more).toBe(true);
    const second = await page(first.next_cursor_id);
    expect(second.signals.map((s: { payload: { i: number } }) => s.payload.i)).toEqual([1]);
    // the two approvals resolved the wait: what came after is not the task's evidence
    expect(second.has_more).toBe(false);
    expect((await api('GET', `/api/workflows/${id}/signals?limit=10`)).body.signals).toHaveLength(4);
    expect((await api('GET', `/api/workflows/${id}/tasks/nope/signals`)).status).toBe(404);
  });

  it('streams snapshots of a workflow as it changes; a client resuming with Last-Event-ID gets only what it missed', async () => {
    const id = await waitingWorkflow(2);
    const a = subscribe(`/api/workflows/${id}/events`);
    await a.when(() => snapshots(a).length === 1);
    const first = snapshots(a)[0];
    expect(first.data.workflow.id).toBe(id);
    expect(first.data.tasks.find((t: { name: string }) => t.name === 'decide').wait.phase).toBe('waiting');
    await api('POST', `/api/workflows/${id}/signals`, { key: 'approve' });
    await a.when(() => snapshots(a).some((e) => e.data.tasks.find((t: { name: string }) => t.name === 'decide').wait.last_evaluation?.terms[0].matched === 1));
    const ids = snapshots(a).map((e) => Number(e.id));
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const last = snapshots(a)[snapshots(a).length - 1].id!;
    a.close();

    // nothing changed since: no snapshot, only heartbeats
    const b = subscribe(`/api/workflows/${id}/events`, last);
    await b.when(() => b.comments.includes('heartbeat'));
    expect(snapshots(b)).toEqual([]);
    b.close();

    // a change while away: the resumed stream starts with the current state, numbered after the old one
    await api('POST', `/api/workflows/${id}/signals`, { key: 'approve' });
    expect((await final(rt, id)).state).toBe('completed');
    const c = subscribe(`/api/workflows/${id}/events`, last);
    await c.when(() => snapshots(c).some((e) => e.data.workflow.state === 'completed'));
    expect(Number(snapshots(c)[0].id)).toBeGreaterThan(Number(last));
    c.close();

    const gone = subscribe('/api/workflows/no-such-id/events');
    await gone.when(() => gone.events.some((e) => e.event === 'gone'));
    gone.close();
  });

  it('streams the workflow list with its filters; writers notify only while a stream is open', async () => {
    const listeners = async () =>
      (await rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${rt.schema}".change_listeners WHERE expires_at > now()`)).rows[0].n;
    await until(async () => (await listeners()) === 0);
    const s = subscribe('/api/events?name=quick&limit=3');
    await s.when(() => snapshots(s).length === 1);
    expect(await listeners()).toBe(1);
    const id = (await api('POST', '/api/workflows', { name: 'quick' })).body.id;
    await settle(rt);
    await s.when(() => snapshots(s).some((e) => e.data.workflows[0]?.id === id && e.data.workflows[0].state === 'completed'));
    expect(snapshots(s).every((e) => e.data.workflows.length <= 3 && e.data.workflows.every((w: { name: string }) => w.name === 'quick'))).toBe(true);
    const seen = snapshots(s)[snapshots(s).length - 1].id!;
    s.close();
    await until(async () => (await listeners()) === 0);

    // nobody listened meanwhile, so the server cannot know what changed: a resumed stream gets the current state
    const later = (await api('POST', '/api/workflows', { name: 'quick' })).body.id;
    const resumed = subscribe('/api/events?name=quick&limit=3', seen);
    await resumed.when(() => snapshots(resumed).some((e) => e.data.workflows.some((w: { id: string }) => w.id === later)));
    resumed.close();
  });

  it('refuses requests without the token, from other origins, for other hosts, and changes that are not JSON', async () => {
    const host = new URL(server.url).host;
    expect((await raw('GET', '/api/workflows', { host })).status).toBe(401);
    expect((await raw('GET', '/api/workflows', { host, authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await raw('GET', '/api/workflows', { host: `evil.example:${new URL(server.url).port}`, authorization: `Bearer ${TOKEN}` })).status).toBe(403);
    expect((await raw('GET', '/', { host: 'evil.example' })).status).toBe(403);
    const post = (headers: Record<string, string>) =>
      raw(
        'POST',
        '/api/workflows',
        { host, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
        JSON.stringify({ name: 'quick' }),
      );
    expect((await post({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ 'content-type': 'text/plain' })).status).toBe(415);
    expect((await post({ origin: `http://${host}`, 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    expect((await raw('POST', '/api/workflows', { host, 'content-type': 'application/json', origin: 'http://evil.example' }, '{}')).status).toBe(403);

    // the page trades the token for a session cookie that then authorises reads and changes
    const session = await fetch(`${server.url}/api/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(session.status).toBe(204);
    const cookie = session.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toContain(TOKEN);
    const pair = cookie.split(';')[0];
    expect((await raw('GET', '/api/workflows', { host, cookie: pair })).status).toBe(200);
    expect((await raw('GET', '/api/workflows', { host, cookie: 'braid_session=forged' })).status).toBe(401);
    expect((await raw('POST', '/api/session', { host, 'content-type': 'application/json' }, '{}')).status).toBe(401);
  });

  it("listening beyond loopback, it still answers only its own Host names (this machine's), not any", async () => {
    const wide = await startApiServer(rt, { token: TOKEN, host: '0.0.0.0' });
    try {
      const port = new URL(wide.url).port;
      const get = (host: string) => raw('GET', '/api/workflows', { host, authorization: `Bearer ${TOKEN}` }, undefined, wide.url);
      expect((await get(`127.0.0.1:${port}`)).status).toBe(200);
      expect((await get(`${hostname()}:${port}`)).status).toBe(200);
      expect((await get(`rebound.example:${port}`)).status).toBe(403);
      expect(wide.hosts).toContain(`${hostname().toLowerCase()}:${port}`);
    } finally {
      await wide.close();
    }
  });

  it('bad input gets one clear error and a 4xx', async () => {
    expect((await api('POST', '/api/workflows', 'not json')).status).toBe(400);
    expect((await api('POST', '/api/workflows', [1, 2])).status).toBe(400);
    expect((await api('POST', '/api/workflows', {})).body).toEqual({ error: '"name" is required', code: 'bad_request' });
    expect((await api('POST', '/api/workflows', { name: 'nope' })).status).toBe(404);
    expect((await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 'x' } })).status).toBe(422);
    expect((await api('GET', '/api/workflows/nope')).status).toBe(404);
    expect((await api('POST', '/api/workflows/nope/retry', { mode: 'sideways' })).status).toBe(400);
    // JSON nested 5,000 deep: one clear 400 on every route that reads a body, never a 500
    const nested = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    for (const [path, body] of [
      ['/api/workflows', `{"name":"approval","inputs":${nested}}`],
      ['/api/events', `{"name":"x","payload":${nested}}`],
      ['/api/events/x', nested],
      ['/api/workflows/nope/signals', `{"key":"k","payload":${nested}}`],
    ])
      expect(await api('POST', path, body)).toMatchObject({ status: 400, body: { code: 'json_too_deep' } });
    // nesting a string holds is no nesting
    expect((await api('POST', '/api/workflows', { name: 'nope', inputs: { s: '['.repeat(5000) } })).status).toBe(404);
    expect((await api('GET', '/api/definitions/nope')).status).toBe(404);
    expect((await api('GET', '/api/nothing-here')).status).toBe(404);
    expect((await api('GET', '/api/workflows/%ZZ')).status).toBe(400);
    expect((await raw('GET', '/%ZZ', { host: new URL(server.url).host })).status).toBe(200);
    const id = (await api('POST', '/api/workflows', { name: 'quick' })).body.id;
    expect((await api('GET', `/api/workflows/${id}/signals?cursor_id=xyz`)).status).toBe(400);
    expect((await api('GET', `/api/workflows/${id}/tasks/only/signals?cursor_id=1;drop`)).status).toBe(400);
    const deep = await api('POST', `/api/workflows/${id}/signals`, `{"key":"k","payload":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    expect(deep.status).toBe(400);
    expect(deep.body.code).toBe('json_too_deep');
    expect((await api('POST', '/api/workflows', 'x'.repeat(11 * 1024 * 1024))).status).toBe(413);
  });

  it('a signal key no task waits on is a 422 with a hint, stored only with any_key', async () => {
    const id = await waitingWorkflow(2);
    const typo = await api('POST', `/api/workflows/${id}/signals`, { key: 'aprove' });
    expect(typo).toMatchObject({ status: 422, body: { code: 'signal_key_unknown', error: expect.stringContaining('(did you mean "approve"?)') } });
    expect((await api('POST', `/api/workflows/${id}/signals`, { key: 'aprove', any_key: true })).status).toBe(201);
    expect((await api('POST', `/api/workflows/${id}/signals`, { key: 'approve', any_key: 'yes' })).status).toBe(400);
    expect((await rt.workflow(id).signals.list()).signals.map((r) => r.key)).toEqual(['aprove']);
  });

  it('a traceparent header on a start or a signal is kept for the spans that continue it; a malformed one is ignored', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const stored = async (table: 'workflows' | 'signals', column: string, value: string) =>
      (await rt.db.query<{ trace_context: string | null }>(`SELECT trace_context FROM "${rt.schema}".${table} WHERE ${column} = $1`, [value])).rows[0]
        .trace_context;
    const started = await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 1 } }, { traceparent, tracestate: 'vendor=1' });
    expect(started.status).toBe(201);
    expect(await stored('workflows', 'id', started.body.id)).toBe(`${traceparent}\nvendor=1`);
    const signal = await api('POST', `/api/workflows/${started.body.id}/signals`, { key: 'approve' }, { traceparent });
    expect(signal.status).toBe(201);
    expect(await stored('signals', 'id::text', signal.body.signal.id)).toBe(traceparent);
    const plain = await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 1 } }, { traceparent: 'garbage' });
    expect(plain.status).toBe(201);
    expect(await stored('workflows', 'id', plain.body.id)).toBeNull();
  });

  it('a caller-chosen id: 201 when started, 200 with existing when found, 409 on a conflict, 400 when malformed', async () => {
    const first = await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 7 }, id: 'inv-7' });
    expect(first).toMatchObject({ status: 201, body: { id: 'inv-7' } });
    expect(await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 7 }, id: 'inv-7' })).toMatchObject({
      status: 200,
      body: { id: 'inv-7', existing: true },
    });
    const conflict = await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 8 }, id: 'inv-7' });
    expect(conflict).toMatchObject({ status: 409, body: { code: 'workflow_conflict' } });
    expect((await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 7 }, id: 'in v' })).body).toMatchObject({ code: 'workflow_id_invalid' });
    expect((await api('POST', '/api/workflows', { name: 'approval', inputs: { n: 7 }, id: 7 })).status).toBe(400);
  });

  it('values Postgres cannot store are a 400 naming the field', async () => {
    const nul = await api('POST', '/api/workflows', '{"name":"approval","inputs":{"n":1,"note":"a\\u0000"}}');
    expect(nul).toMatchObject({ status: 400, body: { error: 'the inputs hold U+0000 at /note, which Postgres cannot store', code: 'value_unstorable' } });
    const id = await waitingWorkflow(3);
    const payload = await api('POST', `/api/workflows/${id}/signals`, '{"key":"approve","payload":{"by":"\\ud800x"}}');
    expect(payload).toMatchObject({
      status: 400,
      body: { error: "the signal's payload holds an unpaired surrogate U+D800 at /by, which Postgres cannot store" },
    });
    const source = await api('POST', `/api/workflows/${id}/signals`, '{"key":"approve","source":"\\u0000"}');
    expect(source.body.error).toBe("the signal's source holds U+0000, which Postgres cannot store");
    expect((await api('POST', `/api/workflows/${id}/signals`, '{"key":"approve","idempotency_key":"a\\u0000"}')).status).toBe(400);
    expect((await api('POST', `/api/workflows/${id}/signals`, '{"key":"appr\\udc00ove"}')).status).toBe(400);
    expect((await rt.workflow(id).signals.list()).signals).toEqual([]);
  });

  it('a signal to a finished workflow is a 409 that says so; a replay of an accepted one is answered as before', async () => {
    const { body } = await api('POST', '/api/workflows', { name: 'quick' });
    await final(rt, body.id);
    const late = await api('POST', `/api/workflows/${body.id}/signals`, { key: 'approve', payload: {} });
    expect(late).toMatchObject({
      status: 409,
      body: { error: `workflow ${body.id} is completed: it takes no more signals (retry it first to run it again)`, code: 'workflow_finished' },
    });
    expect((await rt.workflow(body.id).signals.list()).signals).toEqual([]);
  });

  it('every error body carries its code, and the code decides the status', async () => {
    const codes = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
      const r = await api(method, path, body, headers);
      return [r.status, r.body.code];
    };
    expect(await codes('GET', '/api/workflows/nope')).toEqual([404, 'workflow_not_found']);
    expect(await codes('POST', '/api/workflows', { name: 'nope' })).toEqual([404, 'workflow_not_registered']);
    expect(await codes('POST', '/api/workflows', { name: 'approval', inputs: { n: 'x' } })).toEqual([422, 'inputs_invalid']);
    expect(await codes('GET', '/api/workflows?cursor=garbage')).toEqual([400, 'cursor_invalid']);
    expect(await codes('GET', '/api/definitions/nope')).toEqual([404, 'definition_not_found']);
    expect(await codes('GET', '/api/nothing-here')).toEqual([404, 'route_not_found']);
    expect(await codes('GET', '/api/workflows', undefined, { authorization: 'Bearer wrong' })).toEqual([401, 'unauthorized']);
    const { body } = await api('POST', '/api/workflows', { name: 'quick' });
    expect(await codes('GET', `/api/workflows/${body.id}/tasks/nope/diagnostics`)).toEqual([404, 'task_not_found']);
    await final(rt, body.id);
    expect(await codes('POST', `/api/workflows/${body.id}/signals`, { key: 'k' })).toEqual([409, 'workflow_finished']);
    expect(await codes('POST', `/api/workflows/${body.id}/signals`, { key: '' })).toEqual([400, 'signal_invalid']);
    // the deploy routes: versions by prefix, diffs, moves; wrong types are one 400 each
    expect(await codes('GET', '/api/definitions/quick?hash=zz')).toEqual([404, 'definition_not_found']);
    expect(await codes('GET', '/api/definitions/quick/diff')).toEqual([400, 'bad_request']);
    expect(await codes('GET', '/api/definitions/quick/diff?from=ffff')).toEqual([404, 'definition_not_found']);
    expect(await codes('POST', '/api/definitions/nope/upgrade', {})).toEqual([404, 'workflow_not_registered']);
    expect(await codes('POST', '/api/definitions/quick/upgrade', { ids: 'x' })).toEqual([400, 'bad_request']);
    expect(await codes('POST', '/api/definitions/quick/upgrade', { ids: [1] })).toEqual([400, 'bad_request']);
    expect(await codes('POST', '/api/definitions/quick/upgrade', { dry_run: 'yes' })).toEqual([400, 'bad_request']);
    expect(await codes('POST', '/api/definitions/quick/upgrade', { to: 12 })).toEqual([400, 'bad_request']);
    expect(await codes('POST', `/api/workflows/${body.id}/retry`, { on_current: 'yes' })).toEqual([400, 'bad_request']);
    const current = (await api('GET', '/api/definitions/quick')).body.hash as string;
    const diff = await api('GET', `/api/definitions/quick/diff?from=${current.slice(0, 12)}`);
    expect(diff).toMatchObject({ status: 200, body: { name: 'quick', from: current, to: current, changes: [] } });
    expect(await api('POST', '/api/definitions/quick/upgrade', { dry_run: true })).toMatchObject({
      status: 200,
      body: { name: 'quick', to: current, results: [] },
    });
    expect((await api('GET', '/api/deploy/baseline?names=quick')).body.versions.map((v: { name: string; current: boolean }) => [v.name, v.current])).toEqual([
      ['quick', true],
    ]);
  });

  it('never reads definitions from a folder the client names', async () => {
    const dir = definitionsDir({ sneaky: 'name: sneaky\ntasks:\n  t: { kind: work }\n' });
    const started = await api('POST', '/api/workflows', { name: 'sneaky', definitions_dir: dir });
    // a field the route does not declare is refused, never read
    expect(started).toMatchObject({ status: 400, body: { error: 'the body has no field "definitions_dir" (fields: name, inputs, id, actor, reason)' } });
    expect(await rt.definition('sneaky')).toBeUndefined();
  });

  it("an internal error is a 500 that echoes no database text; the operator's log has it", async () => {
    const broken = await testRuntime({ definitions: { quick: DEFS.quick } });
    const warnings: string[] = [];
    const log = { info: () => undefined, taskDone: () => undefined, warn: (m: string) => void warnings.push(m) };
    const other = await startApiServer(broken, { token: TOKEN, log });
    try {
      await broken.db.query(`DROP TABLE "${broken.schema}".signals CASCADE`);
      const id = await broken.start('quick');
      const res = await fetch(`${other.url}/api/workflows/${id}/signals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: '{"key":"k","any_key":true}',
      });
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'internal error', code: 'internal' });
      expect(warnings.join('\n')).toMatch(/internal error: .*signals.* does not exist/);
    } finally {
      await other.close();
    }
  });
});
