/**
 * The operation contract (src/api/route-table.ts), held against the server on the whole surface: every route it
 * declares (and the server's own, /metrics) is asked for by a viewer, an operator, an admin and an operator
 * limited to another workflow name, and each answer is what the declaration says — refused for a role below the
 * one declared, refused to the scoped user where the scope rule says so, and a list that shows the scoped user
 * no name outside its scope. Nothing here names a route: a route added to the table is tried without a change.
 */
import { describe, expect, it } from 'vitest';
import type { BodySchema } from '../../src/api/route-inputs.js';
import { type OperationContract, pathTo, ROUTES, type RouteName, SERVER_ROUTES } from '../../src/api/route-table.js';
import { startApiServer } from '../../src/api/server.js';
import type { Runtime } from '../../src/index.js';
import { Metrics } from '../../src/runtime/telemetry/metrics.js';
import { ROLES, type Role, roleAllows } from '../../src/runtime/wire/index.js';
import { backend, clockOf, definitionsDir, drivenRuntime, settle } from '../helpers/runtime.js';

const BILLING = `name: billing
inputs: { type: object }
schedules:
  - { name: nightly, cron: "0 3 * * *", timezone: UTC }
tasks:
  t:
    kind: t
    wait:
      terms:
        approve: { callback: { expires: 2d, schema: { type: object } } }
`;

/** What the path parameters stand for: every one names something of `billing`, the name the scoped user may not use. */
const params = (id: string) => ({ id, name: 'billing', workflow: 'billing', schedule: 'nightly', task: 't', term: 'approve' });
/** A body naming `billing` where a body names a workflow (the scope rule `body`); an empty object elsewhere. */
const body = (route: string) => (route === 'start' ? { name: 'billing' } : route === 'startBatch' ? { name: 'billing', workflows: [{}] } : {});

interface Asker {
  name: string;
  role: Role;
  scoped: boolean;
  token: string;
}

/** The answer's status and text; a stream's first event, or its first heartbeat where it has nothing to send yet. */
async function ask(url: string, op: OperationContract, path: string, token: string, json: unknown): Promise<{ status: number; text: string }> {
  const abort = new AbortController();
  const res = await fetch(`${url}${path}`, {
    method: op.method,
    headers: { authorization: `Bearer ${token}`, ...(op.method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    body: op.method === 'POST' ? JSON.stringify(json) : undefined,
    signal: abort.signal,
  });
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return { status: res.status, text: await res.text() };
  const reader = res.body!.getReader();
  let text = '';
  while (!/(^|\n)event: \w+\ndata: |: heartbeat/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  abort.abort();
  return { status: res.status, text };
}

async function runtimeWithUsers(): Promise<{ rt: Runtime; id: string; askers: Asker[]; metrics: Metrics }> {
  const metrics = new Metrics();
  const rt = await drivenRuntime({ definitions: { billing: BILLING }, handlers: { t: async () => ({}) }, metrics });
  await rt.startWorker();
  const id = await rt.start('billing', {}, { actor: 'setup' });
  // a second run, on a version a newer one replaces: an upgrade has it to move (the first is cancelled on the way)
  await rt.start('billing', {}, { actor: 'setup' });
  await rt.registerDefinitions(definitionsDir({ billing: BILLING.replace('name: billing', 'name: billing\ndescription: the second version') }));
  // a pause naming it: the pauses list is one of the lists a scoped user sees filtered
  await rt.pauses.pause('workflow', 'billing', { actor: 'setup', reason: 'quiet hours' });
  await settle(rt);
  const askers: Asker[] = [];
  for (const role of ROLES) askers.push({ name: role, role, scoped: false, token: (await rt.users.add(`${role}-user`, { role })).token });
  askers.push({
    name: 'operator of refunds_*',
    role: 'operator',
    scoped: true,
    token: (await rt.users.add('scoped', { role: 'operator', workflows: 'refunds_*' })).token,
  });
  return { rt, id, askers, metrics };
}

/** A value its schema takes: an enum's first, as few items as it needs, an object's required fields. */
function valueFor(p: BodySchema): unknown {
  if (p.enum) return p.enum[0];
  if (p.type === 'array') return Array.from({ length: p.minItems ?? 0 }, () => valueFor(p.items ?? {}));
  if (p.type === 'object') return validFor(p);
  return p.type === 'boolean' ? false : p.type === 'string' ? 'x' : 1;
}

/** A body its schema takes: each required field a value of its type. */
function validFor(schema: BodySchema): Record<string, unknown> {
  return Object.fromEntries((schema.required ?? []).map((k) => [k, valueFor(schema.properties![k])]));
}

/** A value no field of this type takes. */
function wrongValue(p: BodySchema): unknown {
  return p.type === 'string' ? 42 : p.type === 'boolean' || p.type === 'number' || p.type === 'integer' ? 'yes' : p.type === 'array' ? {} : [];
}

const ALL: [string, OperationContract][] = [...Object.entries(ROUTES).filter(([r]) => r !== 'session'), ...Object.entries(SERVER_ROUTES)];

describe(`the operation contract, on every route (${backend})`, () => {
  it('declares a scope rule that fits each path: a workflow id is `workflow`, a name is `name` or `across`, `none` reads no workflow', () => {
    const misfits = ALL.flatMap(([route, op]) => {
      const fits = op.path.includes(':id')
        ? op.scope === 'workflow'
        : /:(name|workflow)\b/.test(op.path)
          ? op.scope === 'name' || op.scope === 'across'
          : op.scope !== 'workflow' && op.scope !== 'name' && (op.scope !== 'none' || route === 'me');
      return fits ? [] : [`${route} (${op.path}) is declared ${op.scope}`];
    });
    expect(misfits).toEqual([]);
  });

  it('declares the body every change takes (every POST route)', () => {
    expect(ALL.filter(([, op]) => op.method === 'POST' && typeof (op as { body?: unknown }).body !== 'object').map(([route]) => route)).toEqual([]);
  });

  it('declares the audit action of every change (every POST route but the session)', () => {
    expect(ALL.filter(([route, op]) => op.method === 'POST' && route !== 'session' && !op.audit).map(([route]) => route)).toEqual([]);
  });

  it('refuses a role below the one declared, refuses the scoped user what its scope rule refuses, and filters its lists', async () => {
    const { rt, id, askers, metrics } = await runtimeWithUsers();
    const server = await startApiServer(rt, { token: 'server-token-0123456789', metrics, heartbeatMs: 100 });
    const wrong: string[] = [];
    const changed = new Set<string>();
    let asked = 0;
    try {
      // the refused first (they change nothing), then the allowed (which may change what later ones find: a cancel)
      const order = [...askers].sort((a, b) => Number(b.scoped) - Number(a.scoped) || ROLES.indexOf(a.role) - ROLES.indexOf(b.role));
      for (const who of order)
        for (const [route, op] of ALL) {
          // a long poll (GET .../wait) answers at once
          const path = route in ROUTES ? pathTo(route as RouteName, params(id) as never, { timeout_ms: 1 }) : op.path;
          const audited = async () => (op.audit ? (await rt.auditTrail({ action: op.audit, limit: 1000 })).length : 0);
          const before = await audited();
          const { status, text } = await ask(server.url, op, path, who.token, body(route));
          asked++;
          // the first change a route makes is recorded under the action it declares (a repeat may change nothing)
          if (op.audit && status >= 200 && status < 300 && !changed.has(route)) {
            changed.add(route);
            if ((await audited()) <= before) wrong.push(`${who.name}: ${op.method} ${path} (${route}) answered ${status} and wrote no ${op.audit} audit line`);
          }
          const said = `${who.name}: ${op.method} ${path} (${route}: ${op.role}, ${op.scope})`;
          const refused = status === 403;
          if (!roleAllows(who.role, op.role)) {
            if (!refused) wrong.push(`${said} answered ${status}, not 403 for the role`);
          } else if (who.scoped && op.scope !== 'none' && op.scope !== 'filtered') {
            if (!refused) wrong.push(`${said} answered ${status}, not 403 for the scope`);
          } else if (refused || status === 401) wrong.push(`${said} was refused (${status}): ${text.slice(0, 200)}`);
          else if (who.scoped && text.includes('billing')) wrong.push(`${said} showed another name: ${text.slice(0, 300)}`);
        }
    } finally {
      await server.close();
    }
    expect(asked).toBe(4 * ALL.length);
    expect(wrong).toEqual([]);
    // the allowed changes that went through were audited (each checked above): at least these
    expect((await rt.auditTrail({ action: 'workflow.start' })).length).toBeGreaterThan(0);
    expect((await rt.auditTrail({ action: 'schedule.pause' })).length).toBeGreaterThan(0);
    expect([...changed].sort()).toEqual(expect.arrayContaining(['cancel', 'pause', 'start', 'upgrade']));
  });

  it("holds every change's body to the schema it declares: every field of every route, of a wrong type, unknown, or missing, is one 400 naming it, with nothing done", async () => {
    // no users: the server's own token is the admin (a user's token costs a hash check a request)
    const rt = await drivenRuntime({ definitions: { billing: BILLING }, handlers: { t: async () => ({}) } });
    const id = await rt.start('billing', {}, { actor: 'setup' });
    const admin = { token: 'server-token-0123456789' };
    const server = await startApiServer(rt, { token: admin.token });
    const wrong: string[] = [];
    let tried = 0;
    const audit = async () => (await rt.auditTrail({ limit: 10_000 })).length;
    const before = await audit();
    try {
      for (const [route, op] of Object.entries(ROUTES) as [RouteName, OperationContract][]) {
        // the session is the server's own; an event posted to its name is its payload, any JSON
        if (op.method !== 'POST' || route === 'session' || route === 'emitNamedEvent') continue;
        const schema = op.body as BodySchema;
        const path = pathTo(route, params(id) as never);
        const cases: [string, Record<string, unknown>, RegExp][] = [
          ['an unknown field', { ...validFor(schema), zz_unknown: 1 }, /^the body has no field "zz_unknown" \(fields: /],
          ...(schema.required ?? []).map((field): [string, Record<string, unknown>, RegExp] => {
            const { [field]: _, ...rest } = validFor(schema);
            return [`without ${field}`, rest, new RegExp(`^"${field}" is required$`)];
          }),
          ...Object.entries(schema.properties ?? {}).flatMap(([field, p]): [string, Record<string, unknown>, RegExp][] =>
            p.type === undefined ? [] : [[`${field} of a wrong type`, { ...validFor(schema), [field]: wrongValue(p) }, new RegExp(`^"${field}" is `)]],
          ),
        ];
        for (const [what, json, said] of cases) {
          tried++;
          const { status, text } = await ask(server.url, op, path, admin.token, json);
          const error = status === 400 ? (JSON.parse(text) as { error: string }).error : '';
          if (status !== 400 || !said.test(error)) wrong.push(`${route} ${what}: ${status} ${text.slice(0, 200)}`);
        }
      }
    } finally {
      await server.close();
    }
    expect(wrong).toEqual([]);
    expect(tried).toBeGreaterThan(80);
    expect(await audit()).toBe(before);
  });

  it('ends an open stream within 5 s of its token being revoked, rotated or expiring; a stream of a token that stands goes on', async () => {
    const { rt, id, askers } = await runtimeWithUsers();
    const server = await startApiServer(rt, { token: 'server-token-0123456789', heartbeatMs: 500 });
    try {
      const open = async (token: string, path: string) => {
        const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(200);
        const reader = res.body!.getReader();
        const ended = (async () => {
          let text = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return text;
            text += new TextDecoder().decode(value);
          }
        })();
        return { ended, cancel: () => reader.cancel() };
      };
      const revoked = (await rt.users.add('rex', { role: 'viewer' })).token;
      const rotated = (await rt.users.add('rob', { role: 'viewer' })).token;
      const expiring = (await rt.users.add('eve', { role: 'viewer', expiresInMs: 60_000 })).token;
      const streams = [
        { what: 'revoked', s: await open(revoked, pathTo('events', {})) },
        { what: 'rotated', s: await open(rotated, pathTo('workflowEvents', { id })) },
        { what: 'expired', s: await open(expiring, pathTo('taskStream', { id, task: 't', name: 'none' })) },
      ];
      const staying = await open(askers[0].token, pathTo('events', {}));
      const began = Date.now();
      await rt.users.revoke('rex');
      await rt.users.rotate('rob');
      // the driven runtime's clock: a minute on, the third token has expired
      clockOf(rt).advance(61_000);
      for (const { what, s } of streams) {
        const text = await s.ended;
        expect(text, what).toContain('event: unauthorized');
      }
      expect(Date.now() - began).toBeLessThan(5_000);
      // the viewer's own stream still stands: it ends only when the test leaves it
      const still = await Promise.race([staying.ended.then(() => 'ended'), new Promise((r) => setTimeout(() => r('open'), 2_500))]);
      expect(still).toBe('open');
      await staying.cancel();
    } finally {
      await server.close();
    }
  });
});
