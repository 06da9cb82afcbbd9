/**
 * The privacy canary: a refund workflow run with a random card number marked sensitive, whose every handler path
 * fails or writes with it (a thrown error, ctx.fail, an HTTP kind's 400 body, a stream, a log line, an output, an
 * error from a dep's output), then searched for it everywhere braid keeps or shows anything: every column of
 * every table of its schema (read from information_schema, so a new table or column is searched without a
 * change here), every GET route's answer (from the route table), the UI's page, /metrics, the spans, and the
 * worker's own lines. Each spelling counts: the digits, with spaces, with dashes.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pathTo, ROUTES, type RouteName } from '../../src/api/route-table.js';
import { startApiServer } from '../../src/api/server.js';
import { httpHandler, NonRetryableError } from '../../src/index.js';
import { Metrics } from '../../src/runtime/telemetry/metrics.js';
import { backend, drivenRuntime, final, settle } from '../helpers/runtime.js';

const KEYS = `k1:${randomBytes(32).toString('base64')}`;

const REFUND = `name: refund
inputs:
  type: object
  required: [card, customer]
  properties:
    card: { type: string, sensitive: true }
    customer: { type: string }
on_failure:
  start:
    workflow: incident
    inputs: { failed_id: "\${{ failed.id }}", why: "\${{ failed.task }}: \${{ failed.error }}" }
tasks:
  throws: { kind: throws, max_attempts: 2, args: { card: "\${{ inputs.card }}" } }
  fails: { kind: fails, args: { card: "\${{ inputs.card }}" } }
  http: { kind: http_refund, max_attempts: 1, args: { card: "\${{ inputs.card }}", customer: "\${{ inputs.customer }}" } }
  streams:
    kind: streams
    max_attempts: 1
    args: { card: "\${{ inputs.card }}" }
    streams: { progress: {} }
  outputs: { kind: outputs, args: { card: "\${{ inputs.card }}" } }
  after: { kind: after, max_attempts: 1, deps: [outputs], args: { note: "\${{ deps.outputs.output.note }}" } }
`;
const INCIDENT = `name: incident
inputs: { type: object, required: [failed_id, why], properties: { failed_id: { type: string }, why: { type: string } } }
tasks:
  page: { kind: page, args: { why: "\${{ inputs.why }}" } }
`;

/** A random 16-digit card number and the spellings a person or a formatter gives it. */
function cardSpellings(): { card: string; spellings: string[] } {
  let card = '4';
  while (card.length < 16) card += String(randomInt(10));
  const groups = card.match(/.{4}/g)!;
  return { card, spellings: [card, groups.join(' '), groups.join('-')] };
}
const { card: CARD, spellings: SPELLINGS } = cardSpellings();
const spaced = SPELLINGS[1];
const dashed = SPELLINGS[2];

/** Where a spelling of the card shows in `text`, as a short excerpt; [] when nowhere. */
function hits(text: string): string[] {
  return SPELLINGS.flatMap((s) => {
    const at = text.indexOf(s);
    return at < 0 ? [] : [text.slice(Math.max(0, at - 60), at + s.length + 20)];
  });
}

// an HTTP kind's service that refuses the refund, quoting the card in its body
let refusing: Server;
let refusingUrl: string;
beforeAll(async () => {
  refusing = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `card ${dashed} declined by the issuer` }));
    });
  });
  await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', () => r()));
  refusingUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/refund`;
});
afterAll(() => new Promise<void>((r) => refusing.close(() => r())));

describe(`privacy canary (${backend})`, () => {
  it('a sensitive card number used on every failing path is found nowhere: tables, API, UI, metrics, spans, worker lines', async () => {
    const lines: string[] = [];
    const exporter = new InMemorySpanExporter();
    const metrics = new Metrics();
    const rt = await drivenRuntime({
      keys: KEYS,
      metrics,
      tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
      logger: { info: (l) => lines.push(l), warn: (l) => lines.push(l), taskDone: (t, outcome) => lines.push(`${t.name}: ${outcome}`) },
      handlers: {
        throws: async (args) => {
          const card = (args as { card: string }).card;
          throw Object.assign(new Error(`card ${spaced} declined (${card})`), { code: `declined_${card}` });
        },
        fails: async (args, ctx) => ctx.fail(`card ${(args as { card: string }).card} declined`, { retry: false, code: 'declined' }),
        http_refund: httpHandler('http_refund', { url: refusingUrl, secret: 'whsec_canary_0123456789' }),
        streams: async (args, ctx) => {
          const card = (args as { card: string }).card;
          await ctx.stream('progress').write({ step: `charging ${card}`, card });
          throw new NonRetryableError(`stream of ${card} broke`);
        },
        outputs: async (args, ctx) => {
          const card = (args as { card: string }).card;
          ctx.log.info(`refunding ${spaced}`, { card, nested: { json: JSON.stringify({ card }) } });
          return { note: `refunded ${card}`, ok: true };
        },
        after: async (args) => {
          throw new NonRetryableError(`after: ${(args as { note: string }).note}`);
        },
        page: async () => ({ paged: true }),
      },
      definitions: { refund: REFUND, incident: INCIDENT },
    });
    await rt.startWorker();
    const id = await rt.start('refund', { card: CARD, customer: 'ada' });
    await settle(rt);
    expect((await final(rt, id)).state).toBe('failed');
    const tasks = await rt.workflow(id).tasks();
    const failedTasks = tasks.filter((t) => t.state === 'discarded').map((t) => t.name);
    expect(failedTasks.sort()).toEqual(['after', 'fails', 'http', 'streams', 'throws']);
    // the texts kept what they say, less the card
    const errorOf = (name: string) => JSON.stringify(tasks.find((t) => t.name === name)?.errors);
    expect(errorOf('throws')).toContain('declined ([redacted])');
    expect(errorOf('http')).toContain('card [redacted] declined by the issuer');
    const incidents = (await rt.listWorkflows({ name: 'incident' })).workflows;
    expect(incidents).toHaveLength(1);
    await settle(rt);

    // every column of every table of braid's schema, as information_schema lists them
    const s = rt.schema;
    const { rows: columns } = await rt.db.query<{ table_name: string; column_name: string }>(
      `SELECT c.table_name, c.column_name FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position`,
      [s],
    );
    expect(columns.length).toBeGreaterThan(50);
    const found: string[] = [];
    let searched = 0;
    for (const { table_name, column_name } of columns) {
      const { rows } = await rt.db.query<{ v: string | null }>(`SELECT "${column_name}"::text AS v FROM "${s}"."${table_name}"`);
      for (const r of rows) {
        if (r.v === null) continue;
        searched++;
        for (const h of hits(r.v)) found.push(`${table_name}.${column_name}: ${h}`);
      }
    }
    expect(searched).toBeGreaterThan(100);
    // the card was stored: sealed
    const sealed = await rt.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${s}".tasks WHERE workflow_id = $1 AND args::text LIKE '%braid:enc:v1:%'`,
      [id],
    );
    expect(sealed.rows[0].n).toBeGreaterThanOrEqual(5);

    // a search by the card finds nothing (no search oracle)
    for (const spelling of SPELLINGS) expect((await rt.listWorkflows({ error: spelling })).workflows).toEqual([]);

    // every GET route of the API, as an admin and as a viewer, for every task of the run; the UI's page; /metrics
    const server = await startApiServer(rt, { token: 'server-token-0123456789', metrics });
    try {
      const admin = (await rt.users.add('ana', { role: 'admin' })).token;
      const viewer = (await rt.users.add('vic', { role: 'viewer' })).token;
      const get = async (path: string, token: string): Promise<string> => {
        const abort = new AbortController();
        const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
        if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return res.text();
        // a live stream: what it sends first (its snapshot), then it is left
        const reader = res.body!.getReader();
        let text = '';
        while (!text.includes('\n\n')) {
          const { value, done } = await reader.read();
          if (done) break;
          text += new TextDecoder().decode(value);
        }
        abort.abort();
        return text;
      };
      const params = (task: string) => ({ id, task, name: 'refund', workflow: 'refund', schedule: 'none', term: 'none' });
      let answered = 0;
      for (const [route, r] of Object.entries(ROUTES) as [RouteName, (typeof ROUTES)[RouteName]][]) {
        if (r.method !== 'GET') continue;
        const perTask = r.path.includes(':task');
        for (const task of perTask ? tasks.map((t) => t.name) : ['throws']) {
          const p = params(task);
          const query = route === 'taskStream' ? { follow: 0 } : route === 'workflows' ? { error: CARD } : {};
          const path = pathTo(route, (route === 'taskStream' ? { ...p, name: 'progress' } : p) as never, query);
          for (const token of [admin, viewer]) {
            const body = await get(path, token);
            answered++;
            for (const h of hits(body)) found.push(`GET ${path}: ${h}`);
          }
        }
      }
      expect(answered).toBeGreaterThan(60);
      for (const path of ['/', `/workflows/${id}`]) for (const h of hits(await get(path, admin))) found.push(`UI ${path}: ${h}`);
      const scraped = await get('/metrics', admin);
      expect(scraped).toContain('braid_tasks_ended_total');
      for (const h of hits(scraped)) found.push(`/metrics: ${h}`);
    } finally {
      await server.close();
    }

    // the spans (names, attributes, events, status) and the worker's own lines
    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBeGreaterThan(5);
    for (const span of spans)
      for (const h of hits(JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })))
        found.push(`span ${span.name}: ${h}`);
    expect(lines.some((l) => l.includes('failed: card [redacted] declined'))).toBe(true);
    for (const line of lines) for (const h of hits(line)) found.push(`worker line: ${h}`);

    expect(found).toEqual([]);
  });
});
