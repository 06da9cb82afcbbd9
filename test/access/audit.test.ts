import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import type { AuditRecord, Runtime } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { tempProject } from '../helpers/dev-process.js';
import { advance, backend, drivenRuntime, postgresUrl, testRuntime } from '../helpers/runtime.js';

const DAY = 86_400_000;
const SECRET = 'a1:an-audit-test-key-of-at-least-thirty-two-chars';

const WAIT = `name: w
tasks:
  a:
    kind: a
    wait:
      expr: go || cb
      terms:
        go: { signal: go, label: Go }
        cb: { callback: { expires: 1h, schema: { type: object } } }
`;

const NIGHTLY = `name: nightly
schedules:
  - name: tick
    cron: "0 3 * * *"
tasks:
  gather: { kind: gather }
`;

/** The lines an action added, oldest first, by action (and actor, role and reason where they matter). */
async function added(rt: Runtime, act: () => Promise<unknown>): Promise<AuditRecord[]> {
  const before = (await rt.auditTrail({ limit: 1 }))[0]?.id ?? '0';
  await act();
  const lines = await rt.auditTrail({ limit: 1000 });
  return lines.filter((l) => BigInt(l.id) > BigInt(before)).reverse();
}

async function serve(rt: Runtime) {
  const server = await startApiServer(rt, { token: 'server-token-0123456789' });
  const call = async (token: string, path: string, body: unknown = {}) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const reply = (await res.json().catch(() => null)) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(reply)}`);
    return reply;
  };
  return { server, call };
}

describe(`the audit trail (${backend})`, () => {
  it('every operator action through the HTTP API (the UI uses the same routes) writes one audit line, with its user, role and address', async () => {
    const rt = await testRuntime({ definitions: { w: WAIT, nightly: NIGHTLY }, secret: SECRET });
    const { server, call } = await serve(rt);
    try {
      const op = (await rt.users.add('ada', { role: 'operator' })).token;
      const admin = (await rt.users.add('root', { role: 'admin' })).token;
      const one = async (action: string, act: () => Promise<unknown>, who = 'ada') => {
        const lines = await added(rt, act);
        expect(lines.map((l) => [l.action, l.actor, l.source])).toEqual([[action, who, expect.stringMatching(/127\.0\.0\.1/)]]);
        return lines[0];
      };
      const w2 = WAIT.replace('label: Go', 'label: Go on');
      await one('definition.register', () => call(admin, '/api/definitions', { files: [{ path: 'w.yaml', content: w2 }], reason: 'retries' }), 'root');
      const started = await one('workflow.start', () => call(op, '/api/workflows', { name: 'w' }));
      const id = started.workflow_id!;
      expect(started).toMatchObject({ role: 'operator', target: 'w' });
      const batch = await added(rt, () => call(op, '/api/workflows/batch', { name: 'w', workflows: [{}, {}] }));
      expect(batch.map((l) => l.action)).toEqual(['workflow.start', 'workflow.start']);
      const [b1, b2] = batch.map((l) => l.workflow_id!);
      await one('signal', () => call(op, `/api/workflows/${id}/signals`, { key: 'go', payload: {}, reason: 'approved by phone' }));
      const [link] = await rt.callbacks.links(b1, 'a', 'cb');
      const callback = await added(rt, () =>
        fetch(`${server.url}${link.path}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
      );
      expect(callback).toMatchObject([{ action: 'callback', actor: 'callback link', workflow_id: b1, task: 'a' }]);
      await one('task.skip', () => call(op, `/api/workflows/${b2}/tasks/a/skip`, { reason: 'not needed' }));
      const cancelled = await one('workflow.cancel', () => call(op, `/api/workflows/${id}/cancel`, { reason: 'duplicate order' }));
      expect(cancelled).toMatchObject({ workflow_id: id, reason: 'duplicate order', role: 'operator' });
      await one('workflow.retry', () => call(op, `/api/workflows/${id}/retry`, { reason: 'fixed' }));
      await one('pause', () => call(op, '/api/pauses', { scope: 'queue', target: 'payments', reason: 'outage' }));
      await one('resume', () => call(op, '/api/pauses/resume', { scope: 'queue', target: 'payments' }));
      await one('event.emit', () => call(op, '/api/events', { name: 'ping', payload: { n: 1 } }));
      await one('schedule.pause', () => call(admin, '/api/schedules/nightly/tick/pause'), 'root');
      await one('schedule.resume', () => call(admin, '/api/schedules/nightly/tick/resume'), 'root');
      await one('schedule.trigger', () => call(admin, '/api/schedules/nightly/tick/trigger'), 'root');
      const range = { from: '2027-01-01T00:00:00Z', to: '2027-01-01T12:00:00Z' };
      await one('schedule.backfill', () => call(admin, '/api/schedules/nightly/tick/backfill', range), 'root');
      const w3 = w2.replace('label: Go on', 'label: Go now');
      await one('definition.register', () => call(admin, '/api/definitions', { files: [{ path: 'w.yaml', content: w3 }] }), 'root');
      await one('workflow.upgrade', () => call(admin, '/api/definitions/w/upgrade', { ids: [id] }), 'root');
      // a refused request writes nothing
      expect(await added(rt, () => call(op, '/api/definitions', { files: [{ path: 'w.yaml', content: WAIT }] }).catch(() => undefined))).toEqual([]);
      // the workflow's history says it, in status and the API
      const history = (await rt.workflow(id).status()).audit.map((a) => a.action);
      expect(history).toEqual(['workflow.start', 'signal', 'workflow.cancel', 'workflow.retry', 'workflow.upgrade']);
    } finally {
      await server.close();
    }
  });

  it('the database refuses to change an audit line; retention deletes lines older than audit_days', async () => {
    const rt = await drivenRuntime({ retention: { auditMs: 2 * DAY } });
    await rt.pauses.pause('queue', 'q', { actor: 'ada' });
    await expect(rt.db.query(`UPDATE "${rt.schema}".audit SET actor = 'eve'`)).rejects.toThrow(/append-only/);
    expect((await rt.auditTrail())[0].actor).toBe('ada');
    await advance(rt, DAY);
    await rt.pauses.resume('queue', 'q', { actor: 'bob' });
    await advance(rt, 1.5 * DAY);
    await rt.maintenance({ only: ['deleted'] });
    expect((await rt.auditTrail()).map((a) => a.actor)).toEqual(['bob']);
  });

  it.runIf(backend === 'postgres')('every operator action of the CLI writes one audit line, as --actor (else BRAID_ACTOR) with --reason', async () => {
    const rt = await testRuntime({ definitions: { nightly: NIGHTLY } });
    const dir = tempProject({ 'w.yaml': WAIT });
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const cli = async (...args: string[]) => {
      const r = await runCliInProcess([...args, ...db], { cwd: dir, env: { BRAID_SECRET: SECRET } });
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.trim();
    };
    const one = async (action: string, args: string[], who = 'tester') => {
      let out = '';
      const lines = await added(rt, async () => (out = await cli(...args)));
      expect(lines.map((l) => [l.action, l.actor])).toEqual([[action, who]]);
      return { line: lines[0], out };
    };
    await one('definition.register', ['register', '--actor', 'deploy-bot'], 'deploy-bot');
    const { out: id } = await one('workflow.start', ['start', 'w']);
    const signal = await one('signal', ['signal', id, 'go', '--payload', '{}', '--reason', 'approved']);
    expect(signal.line).toMatchObject({ reason: 'approved', role: null, source: null });
    await one('workflow.cancel', ['cancel', id, '--reason', 'duplicate order', '--actor', 'ada'], 'ada');
    await one('workflow.retry', ['retry', id]);
    await one('task.skip', ['task', 'skip', id, 'a', '--reason', 'by hand']);
    await one('pause', ['pause', '--queue', 'q']);
    await one('resume', ['resume', '--queue', 'q']);
    await one('event.emit', ['emit', 'ping']);
    await one('schedule.pause', ['schedule', 'pause', 'nightly', 'tick']);
    await one('schedule.trigger', ['schedule', 'trigger', 'nightly', 'tick']);
    await one('user.add', ['users', 'add', 'vic', '--role', 'viewer']);
    await one('user.rotate', ['users', 'rotate', 'vic']);
    await one('user.revoke', ['users', 'revoke', 'vic']);
    const status = await cli('status', id);
    expect(status).toContain('workflow.cancel by ada: "duplicate order"');
    const audit = await cli('audit', '--action', 'workflow.*', '--json');
    expect((JSON.parse(audit) as AuditRecord[]).map((a) => a.action)).toEqual(['workflow.retry', 'workflow.cancel', 'workflow.start']);
  });
});
