import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import type { Runtime } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, postgresUrl, testRuntime } from '../helpers/runtime.js';

/** A token's secret part (after braid_ and its 24-character id: the secret may hold _ itself). */
const secretOf = (token: string) => token.slice('braid_'.length + 25);

const WAIT = 'name: w\ntasks:\n  a:\n    kind: a\n    wait: { terms: { go: { signal: go } } }\n';

async function serve(rt: Runtime) {
  const server = await startApiServer(rt, { token: 'server-token-0123456789' });
  const call = async (token: string, method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> };
  };
  return { server, call };
}

describe(`people and roles (${backend})`, () => {
  it('a viewer reads and gets 403 on cancel; an operator cancels and gets 403 on an upgrade; revoked and expired tokens are 401', async () => {
    const rt = await testRuntime({ definitions: { w: WAIT } });
    const { server, call } = await serve(rt);
    try {
      // before any user, the server's token is the bootstrap admin
      expect(await call('server-token-0123456789', 'GET', '/api/me')).toMatchObject({ status: 200, body: { role: 'admin', bootstrap: true } });
      const viewer = await rt.users.add('vic', { role: 'viewer' });
      const operator = await rt.users.add('ada', { role: 'operator' });
      const expired = await rt.users.add('old', { role: 'admin', expiresInMs: 1 });
      expect(viewer.token).toMatch(/^braid_[0-9a-f]{24}_/);
      expect(secretOf(viewer.token)).toHaveLength(43);
      // and then no longer
      expect((await call('server-token-0123456789', 'GET', '/api/me')).status).toBe(401);

      const id = await rt.start('w');
      expect(await call(viewer.token, 'GET', '/api/me')).toMatchObject({ status: 200, body: { name: 'vic', role: 'viewer', bootstrap: false } });
      expect((await call(viewer.token, 'GET', `/api/workflows/${id}`)).status).toBe(200);
      const refused = await call(viewer.token, 'POST', `/api/workflows/${id}/cancel`, {});
      expect(refused).toMatchObject({ status: 403, body: { code: 'forbidden', error: 'this needs the operator role; vic is a viewer' } });
      expect((await rt.workflow(id).load()).state).toBe('running');
      // a callback term's links answer for it: reading them is an operator's, not a viewer's
      expect((await call(viewer.token, 'GET', `/api/workflows/${id}/tasks/a/callbacks/go`)).status).toBe(403);

      expect((await call(operator.token, 'POST', `/api/workflows/${id}/tasks/a/skip`, { reason: 'INC-7', actor: 'someone-else' })).status).toBe(200);
      expect((await rt.workflow(id).status()).audit).toMatchObject([{ action: 'task.skip', actor: 'ada', reason: 'INC-7' }]);
      // the audit trail, read by anyone who may read
      expect(await call(viewer.token, 'GET', '/api/audit?actor=ada')).toMatchObject({
        status: 200,
        body: { lines: [{ action: 'task.skip', target: id, task: 'a' }] },
      });
      expect((await call(viewer.token, 'GET', '/api/audit?actor=nobody')).body).toEqual({ lines: [] });
      expect((await call(viewer.token, 'GET', '/api/audit?since=yesterday')).status).toBe(400);
      const upgrade = await call(operator.token, 'POST', '/api/definitions/w/upgrade', { dry_run: true });
      expect(upgrade).toMatchObject({ status: 403, body: { error: 'this needs the admin role; ada is an operator' } });
      const register = await call(operator.token, 'POST', '/api/definitions', { files: [{ path: 'w.yaml', content: WAIT }] });
      expect(register).toMatchObject({ status: 403, body: { error: 'this needs the admin role; ada is an operator' } });
      // an operator's cancel is audited with its name, role and reason
      const other = await rt.start('w');
      expect((await call(operator.token, 'POST', `/api/workflows/${other}/cancel`, { reason: 'duplicate order' })).status).toBe(200);
      expect((await rt.auditTrail({ action: 'workflow.cancel' }))[0]).toMatchObject({ actor: 'ada', role: 'operator', reason: 'duplicate order' });

      await rt.users.revoke('ada');
      expect(await call(operator.token, 'GET', '/api/me')).toMatchObject({ status: 401, body: { code: 'unauthorized' } });
      expect((await call(expired.token, 'GET', '/api/me')).status).toBe(401);
      expect((await call(`${viewer.token.slice(0, -1)}x`, 'GET', '/api/me')).status).toBe(401);
      // a rotated token works, its old one no longer
      const rotated = await rt.users.rotate('vic');
      expect((await call(viewer.token, 'GET', '/api/me')).status).toBe(401);
      expect((await call(rotated.token, 'GET', '/api/me')).status).toBe(200);

      // tokens are not recoverable from the database: only salted hashes, none holding a token's secret
      const { rows } = await rt.db.query<Record<string, unknown>>(`SELECT * FROM "${rt.schema}".users`);
      const stored = JSON.stringify(rows);
      for (const t of [viewer.token, operator.token, expired.token, rotated.token]) expect(stored).not.toContain(secretOf(t));
      expect(rows.every((r) => String(r.token_hash).startsWith('scrypt:16384:8:1:'))).toBe(true);
    } finally {
      await server.close();
    }
  });

  it("a user's session cookie: the UI signs in with a user token; revoking the user ends the session", async () => {
    const rt = await testRuntime({ definitions: { w: WAIT } });
    const { server } = await serve(rt);
    try {
      const { token } = await rt.users.add('ui-user', { role: 'viewer' });
      const session = await fetch(`${server.url}/api/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      });
      expect(session.status).toBe(204);
      const cookie = session.headers.get('set-cookie')!.split(';')[0];
      expect(cookie).not.toContain(secretOf(token));
      const me = await fetch(`${server.url}/api/me`, { headers: { cookie } });
      expect(await me.json()).toMatchObject({ name: 'ui-user', role: 'viewer' });
      await rt.users.revoke('ui-user');
      expect((await fetch(`${server.url}/api/me`, { headers: { cookie } })).status).toBe(401);
      expect((await fetch(`${server.url}/api/me`, { headers: { cookie: `${cookie.slice(0, -2)}00` } })).status).toBe(401);
    } finally {
      await server.close();
    }
  });

  it('braid users add, list, rotate and revoke', async () => {
    if (backend !== 'postgres') return;
    const rt = await testRuntime({});
    const db = ['--database', postgresUrl, '--schema', rt.schema];
    const added = await runCliInProcess(['users', 'add', 'ada', '--role', 'operator', '--expires', '90d', '--actor', 'root1', ...db]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^braid_[0-9a-f]{24}_[A-Za-z0-9_-]{43}\n$/);
    expect(added.stderr).toContain('shown this once');
    expect(await rt.users.authenticate(added.stdout.trim())).toMatchObject({ name: 'ada', role: 'operator' });
    expect((await runCliInProcess(['users', 'add', 'ada', '--role', 'viewer', ...db])).stderr).toContain('exists already');
    expect((await runCliInProcess(['users', 'add', 'bob', '--role', 'boss', ...db])).code).toBe(2);
    expect((await runCliInProcess(['users', 'list', ...db])).stdout).toMatch(/^ada {2}operator {2}expires \d{4}-/);
    const rotated = await runCliInProcess(['users', 'rotate', 'ada', '--actor', 'root1', '--reason', 'lost laptop', ...db]);
    expect(await rt.users.authenticate(added.stdout.trim())).toBeUndefined();
    expect(await rt.users.authenticate(rotated.stdout.trim())).toMatchObject({ name: 'ada' });
    expect((await runCliInProcess(['users', 'revoke', 'ada', '--actor', 'root1', ...db])).stdout).toBe('revoked ada: its token no longer works\n');
    expect(await rt.users.authenticate(rotated.stdout.trim())).toBeUndefined();
    expect((await runCliInProcess(['users', 'revoke', 'nobody', ...db])).code).toBe(1);
    // braid audit: the operator actions, newest first, filtered
    await rt.pauses.pause('queue', 'payments', { actor: 'ada', reason: 'provider down' });
    await rt.pauses.resume('queue', 'payments', { actor: 'bob' });
    const all = await runCliInProcess(['audit', ...db]);
    expect(
      all.stdout
        .trim()
        .split('\n')
        .map((l) => l.replace(/^\S+ {2}/, '')),
    ).toEqual([
      'resume by bob (queue payments)',
      'pause by ada: "provider down" (queue payments)',
      // each change to a user is audited; the refused ones (a name taken, no such user) are not
      'user.revoke by root1 (ada)',
      'user.rotate by root1: "lost laptop" (ada)',
      'user.add by root1 (ada)',
    ]);
    expect(JSON.parse((await runCliInProcess(['audit', '--actor', 'ada', '--json', ...db])).stdout)).toMatchObject([
      { action: 'pause', reason: 'provider down' },
    ]);
    expect((await runCliInProcess(['audit', '--since', 'soon', ...db])).code).toBe(2);
  });

  it('a user scoped to some workflow names: others are 403, its lists show only its own, operations across names are refused', async () => {
    const rt = await testRuntime({ definitions: { w: WAIT, billing_pay: WAIT.replace('name: w', 'name: billing_pay') } });
    const { server, call } = await serve(rt);
    try {
      const bea = (await rt.users.add('bea', { role: 'operator', workflows: 'billing_*' })).token;
      await expect(rt.users.add('bad', { role: 'viewer', workflows: 'Billing!' })).rejects.toThrow('--workflows is workflow-name globs');
      const mine = await rt.start('billing_pay');
      const other = await rt.start('w');
      expect((await call(bea, 'GET', `/api/workflows/${mine}`)).status).toBe(200);
      expect(await call(bea, 'GET', `/api/workflows/${other}`)).toMatchObject({
        status: 403,
        body: { error: 'workflow "w" is outside the workflows bea may use (billing_*)' },
      });
      expect((await call(bea, 'POST', `/api/workflows/${other}/cancel`, {})).status).toBe(403);
      expect((await rt.workflow(other).load()).state).toBe('running');
      expect((await call(bea, 'POST', '/api/workflows', { name: 'w' })).status).toBe(403);
      expect((await call(bea, 'POST', '/api/workflows', { name: 'billing_pay' })).status).toBe(201);
      const listed = (await call(bea, 'GET', '/api/workflows')).body as { workflows: { name: string }[] };
      expect(new Set(listed.workflows.map((w) => w.name))).toEqual(new Set(['billing_pay']));
      const defs = (await call(bea, 'GET', '/api/definitions')).body as { definitions: { name: string }[] };
      expect(defs.definitions.map((d) => d.name)).toEqual(['billing_pay']);
      expect((await call(bea, 'POST', '/api/bulk', { action: 'cancel', filter: { name: 'billing_pay' } })).status).toBe(403);
      expect((await call(bea, 'GET', '/api/me')).body).toMatchObject({ name: 'bea', workflows: 'billing_*' });
      // its audit trail: the lines of its workflows only (not the other's cancel, nor the user it was made by)
      await rt.workflow(other).cancel({ actor: 'ada', reason: 'not billing' });
      await rt.workflow(mine).cancel({ actor: 'ada', reason: 'billing' });
      const audit = (await call(bea, 'GET', '/api/audit')).body as { lines: { action: string; workflow_id: string }[] };
      expect(audit.lines.length).toBeGreaterThan(0);
      expect(audit.lines.every((l) => l.workflow_id !== other && l.workflow_id !== null)).toBe(true);
      expect(audit.lines).toContainEqual(expect.objectContaining({ action: 'workflow.cancel', workflow_id: mine }));
      expect((await rt.auditTrail()).some((l) => l.workflow_id === other)).toBe(true);
    } finally {
      await server.close();
    }
  });
});
