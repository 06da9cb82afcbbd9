import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import { type Handlers, parseKeyRing, type Runtime } from '../../src/index.js';
import { mintToken } from '../../src/runtime/outside/callback-token.js';
import { runCliInProcess } from '../helpers/cli.js';
import { advance, backend, drivenRuntime, final, postgresUrl, settle, testRuntime, until } from '../helpers/runtime.js';

const SECRET = 'k2:this-is-the-new-key-of-at-least-32-chars,k1:this-is-the-old-key-of-at-least-32-chars';

const APPROVAL = `name: approval
inputs:
  type: object
  properties: { approvers: { type: array, items: { type: string } } }
  required: [approvers]
tasks:
  notify: { kind: notify }
  decide:
    kind: record
    deps: [notify]
    wait:
      terms:
        approve:
          label: Two approvals
          count: 2
          where: payload.decision == "approve"
          callback:
            expires: 2d
            recipients: \${{ inputs.approvers }}
            schema:
              type: object
              properties:
                decision: { enum: [approve, reject] }
                comment: { type: string, maxLength: 200 }
              required: [decision]
              additionalProperties: false
`;

interface Sent {
  status: number;
  body: Record<string, unknown>;
}

async function post(url: string, body: unknown): Promise<Sent> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A runtime with the approval workflow; notify hands its links to the test, decide returns the bodies that counted. */
async function approvalRuntime(driven: boolean, secret = SECRET) {
  const handed: string[][] = [];
  const handlers: Handlers = {
    notify: async (_args, ctx) => {
      const links = await ctx.callbacks('decide', 'approve');
      handed.push(links.map((l) => `${l.recipient} ${l.path}`));
      return { sent: links.length };
    },
    record: async (_args, ctx) => {
      const term = ctx.wait!.terms.approve;
      return { counted: term.kind === 'signal' ? term.signals.map((s) => ({ payload: s.payload, source: s.source })) : [] };
    },
  };
  const options = { definitions: { approval: APPROVAL }, handlers, secret };
  const rt = driven ? await drivenRuntime(options) : await testRuntime(options);
  const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
  return { rt, server, handed, linkUrl: (path: string) => `${server.url}${path}` };
}

const decideOf = async (rt: Runtime, id: string) => (await rt.workflow(id).task('decide')).state;

describe(`callback terms through the real HTTP endpoints (${backend})`, () => {
  it("a rejection ends the wait: an expr term reads the callback term's answers by its own name (signals.approve)", async () => {
    const seen: unknown[] = [];
    const REVIEW = `name: review
inputs: { type: object }
tasks:
  decide:
    kind: decide
    wait:
      expr: approve || rejected
      terms:
        approve:
          count: 2
          where: payload.decision == "approve"
          callback:
            expires: 2d
            recipients: [ada, bob]
            schema: { type: object, properties: { decision: { enum: [approve, reject] } }, required: [decision] }
        rejected: { expr: 'signals.approve.exists(s, s.payload.decision == "reject")' }
`;
    const rt = await drivenRuntime({
      definitions: { review: REVIEW },
      secret: SECRET,
      handlers: {
        decide: async (_args, ctx) => {
          seen.push(ctx.wait!.satisfied);
          if (ctx.wait!.satisfied.includes('rejected')) ctx.fail('rejected by a reviewer', { retry: false, code: 'rejected' });
          return { approved: true };
        },
      },
    });
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      await rt.startWorker();
      const id = await rt.start('review', {});
      await settle(rt);
      const [ada] = await rt.callbacks.links(id, 'decide', 'approve');
      expect(await post(`${server.url}${ada.path}`, { decision: 'reject' })).toMatchObject({ status: 200, body: { resolved: ['decide'] } });
      expect((await final(rt, id)).state).toBe('failed');
      expect(seen).toEqual([['rejected']]);
      expect((await rt.workflow(id).task('decide')).errors).toMatchObject([{ code: 'rejected' }]);
    } finally {
      await server.close();
    }
  });

  it("a callback term's description, over inputs and deps, is on the link's page and in the links' answer; a sensitive value it reads is [redacted]", async () => {
    const REFUND = `name: refund
inputs:
  type: object
  required: [amount, card]
  properties: { amount: { type: integer }, card: { type: string, sensitive: true } }
tasks:
  ask: { kind: ask }
  decide:
    kind: decide
    deps: [ask]
    wait:
      terms:
        approve:
          callback:
            expires: 2d
            description: "Refund \${{ inputs.amount }} EUR to card \${{ inputs.card }}, asked by \${{ deps.ask.output.by }}"
            schema: { type: object, properties: { decision: { enum: [approve, reject] } }, required: [decision] }
`;
    const rt = await drivenRuntime({
      definitions: { refund: REFUND },
      secret: SECRET,
      keys: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
      handlers: { ask: async () => ({ by: 'ada' }), decide: async () => ({}) },
    });
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      await rt.startWorker();
      const id = await rt.start('refund', { amount: 120, card: '4000123412341234' });
      await settle(rt);
      const [link] = await rt.callbacks.links(id, 'decide', 'approve');
      const page = await (await fetch(`${server.url}${link.path}`)).text();
      expect(page).toContain('Refund 120 EUR to card [redacted], asked by ada');
      expect(page).not.toContain('4000123412341234');
      const answer = await fetch(`${server.url}/api/workflows/${id}/tasks/decide/callbacks/approve`, {
        headers: { authorization: 'Bearer tok-tok-tok-tok-1' },
      });
      expect(await answer.json()).toMatchObject({ description: 'Refund 120 EUR to card [redacted], asked by ada' });
    } finally {
      await server.close();
    }
  });

  it('a retry of a task after an answered approval keeps the approval: no new links, none sent again, its wait not reset', async () => {
    let mended = false;
    const handed: string[] = [];
    const rt = await drivenRuntime({
      definitions: { approval: `${APPROVAL}  after: { kind: after, deps: [decide], max_attempts: 1 }\n` },
      secret: SECRET,
      handlers: {
        notify: async (_args, ctx) => {
          handed.push(...(await ctx.callbacks('decide', 'approve')).map((l) => l.token));
          return {};
        },
        record: async () => ({}),
        after: async () => {
          if (!mended) throw new Error('ledger down');
          return {};
        },
      },
    });
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada', 'bob'] });
      await settle(rt);
      const links = await rt.callbacks.links(id, 'decide', 'approve');
      for (const l of links) expect((await post(`${server.url}${l.path}`, { decision: 'approve' })).status).toBe(200);
      expect((await final(rt, id)).state).toBe('failed');
      const evidence = (await rt.workflow(id).task('decide')).wait?.evidence;
      expect(evidence).not.toBeNull();
      mended = true;
      expect((await rt.workflow(id).retry({ actor: 'ops' })).retried).toEqual(['after']);
      expect((await final(rt, id)).state).toBe('completed');
      // the approval stands as it was answered: the same links, sent once, the evidence kept
      expect((await rt.callbacks.links(id, 'decide', 'approve')).map((l) => l.token)).toEqual(links.map((l) => l.token));
      expect(handed).toEqual(links.map((l) => l.token));
      expect((await rt.workflow(id).task('decide')).wait?.evidence).toEqual(evidence);
    } finally {
      await server.close();
    }
  });

  it('two approvers of four links complete the term; a replay is 200 replayed; forged 404; a bad body 422; then the wait is over (410)', async () => {
    const { rt, server, handed, linkUrl } = await approvalRuntime(true);
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada', 'bob', 'cy', 'dee'] });
      await settle(rt);
      const links = await rt.callbacks.links(id, 'decide', 'approve');
      expect(links.map((l) => l.recipient)).toEqual(['ada', 'bob', 'cy', 'dee']);
      // the handler upstream saw the same links, before the wait had started
      expect(handed).toEqual([links.map((l) => `${l.recipient} ${l.path}`)]);
      expect(new Set(links.map((l) => l.token)).size).toBe(4);
      const [ada, bob, cy, dee] = links.map((l) => linkUrl(l.path));

      const bad = await post(ada, { decision: 'maybe' });
      expect(bad).toMatchObject({ status: 422, body: { code: 'callback_invalid', problems: [{ pointer: '/decision' }] } });
      expect(String(bad.body.error)).toContain('/decision');
      const extra = await post(ada, { decision: 'approve', amount: 5 });
      expect(extra).toMatchObject({ status: 422, body: { problems: [{ message: expect.stringContaining('amount') }] } });

      const forged = links[0].token.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
      expect(await post(linkUrl(`/callbacks/${forged}`), { decision: 'approve' })).toMatchObject({ status: 404, body: { code: 'callback_not_found' } });
      expect(await post(linkUrl('/callbacks/v1.k2.e30.AAAA'), { decision: 'approve' })).toMatchObject({ status: 404, body: { code: 'callback_not_found' } });
      expect(await post(linkUrl('/callbacks/garbage'), { decision: 'approve' })).toMatchObject({ status: 404, body: { code: 'callback_not_found' } });
      // a link for this very term, signed by another deployment's key of the same id: the same answer as any unknown token
      const foreign = mintToken(parseKeyRing('k2:a-different-deployment-key-of-32-chars')!, { workflowId: id, task: 'decide', term: 'approve', link: 0 });
      expect(await post(linkUrl(`/callbacks/${foreign}`), { decision: 'approve' })).toMatchObject({ status: 404, body: { code: 'callback_not_found' } });
      expect((await rt.workflow(id).signals.list()).signals).toHaveLength(0);

      expect(await post(ada, { decision: 'approve', comment: 'fine' })).toMatchObject({ status: 200, body: { status: 'accepted', recipient: 'ada' } });
      expect(await post(ada, { decision: 'approve', comment: 'fine' })).toMatchObject({ status: 200, body: { status: 'replayed' } });
      expect(await post(ada, { decision: 'reject' })).toMatchObject({ status: 409, body: { code: 'callback_used' } });
      expect(await post(cy, { decision: 'reject' })).toMatchObject({ status: 200, body: { status: 'accepted' } });
      await settle(rt);
      expect(await decideOf(rt, id)).toBe('pending');
      // why it waits, in the words of its links
      const waiting = (await rt.workflow(id).status()).tasks.find((t) => t.name === 'decide')!;
      expect(waiting.pending_reason).toBe('waiting on approve: approve 1/2 link answers');
      const second = await post(bob, { decision: 'approve' });
      expect(second).toMatchObject({ status: 200, body: { status: 'accepted', resolved: ['decide'] } });
      // the sender's retry after its wait resolved the term is still its answer, not a refusal
      expect(await post(bob, { decision: 'approve' })).toMatchObject({ status: 200, body: { status: 'replayed' } });
      expect(await post(dee, { decision: 'approve' })).toMatchObject({ status: 410, body: { code: 'callback_gone' } });
      expect((await final(rt, id)).state).toBe('completed');
      const decide = await rt.workflow(id).task('decide');
      // ctx.wait showed the bodies that counted (the approvals, not cy's rejection), with their recipients
      expect(decide.output).toEqual({
        counted: [
          { payload: { decision: 'approve', comment: 'fine' }, source: { recipient: 'ada', link: 0 } },
          { payload: { decision: 'approve' }, source: { recipient: 'bob', link: 1 } },
        ],
      });
      expect(await post(dee, { decision: 'approve' })).toMatchObject({ status: 410, body: { error: expect.stringContaining('completed') } });
    } finally {
      await server.close();
    }
  });

  it('a link expires `expires` after the wait starts (virtual time): 410, and nothing is stored', async () => {
    const { rt, server, linkUrl } = await approvalRuntime(true);
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada', 'bob'] });
      await settle(rt);
      const [ada, bob] = (await rt.callbacks.links(id, 'decide', 'approve')).map((l) => linkUrl(l.path));
      await advance(rt, 47 * 3_600_000);
      expect(await post(ada, { decision: 'approve' })).toMatchObject({ status: 200, body: { status: 'accepted' } });
      await advance(rt, 3_600_000);
      const late = await post(bob, { decision: 'approve' });
      expect(late).toMatchObject({ status: 410, body: { code: 'callback_gone', error: expect.stringContaining('expired') } });
      expect((await rt.workflow(id).signals.list()).signals).toHaveLength(1);
      expect(await decideOf(rt, id)).toBe('pending');
    } finally {
      await server.close();
    }
  });

  it('a link expires in real time too', async () => {
    const short = APPROVAL.replace('expires: 2d', 'expires: 300ms').replace('count: 2', 'count: 1');
    const rt = await testRuntime({ definitions: { approval: short }, handlers: { notify: async () => ({}), record: async () => ({}) }, secret: SECRET });
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada'] });
      await until(async () => (await rt.workflow(id).task('notify')).state === 'completed');
      const [ada] = await rt.callbacks.links(id, 'decide', 'approve');
      // the readiness signal is the refusal itself: accepted until the 300 ms have passed, then 410
      await until(async () => (await fetch(`${server.url}${ada.path}`)).status === 410);
      expect(await post(`${server.url}${ada.path}`, { decision: 'approve' })).toMatchObject({ status: 410, body: { code: 'callback_gone' } });
    } finally {
      await server.close();
    }
  });

  it('GET shows a form with a button per decision; its POST counts like JSON and answers with a page', async () => {
    const { rt, server, linkUrl } = await approvalRuntime(true);
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada', 'bob'] });
      await settle(rt);
      const [ada, bob] = (await rt.callbacks.links(id, 'decide', 'approve')).map((l) => linkUrl(l.path));
      const page = await fetch(ada);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
      const html = await page.text();
      expect(html).toContain('<button type="submit" name="decision" value="approve">Approve</button>');
      expect(html).toContain('name="comment"');
      expect(html).toContain('For ada');
      expect(html).not.toContain('<script');
      const form = await fetch(ada, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'decision=approve&comment=' });
      expect(form.status).toBe(200);
      expect(await form.text()).toContain('your answer is recorded');
      expect(await (await fetch(ada)).text()).toContain('already used');
      expect(await post(bob, { decision: 'approve' })).toMatchObject({ status: 200 });
      expect((await final(rt, id)).state).toBe('completed');
      const gone = await fetch(ada);
      expect(gone.status).toBe(410);
      expect((await fetch(linkUrl('/callbacks/nothing'))).status).toBe(404);
      expect((await fetch(ada, { method: 'PUT' })).status).toBe(405);
    } finally {
      await server.close();
    }
  });

  it('keys rotate: a link of the old key answers while the old key is listed, and is unknown once it is dropped', async () => {
    const old = await approvalRuntime(true, 'k1:this-is-the-old-key-of-at-least-32-chars');
    try {
      await old.rt.startWorker();
      const id = await old.rt.start('approval', { approvers: ['ada', 'bob'] });
      await settle(old.rt);
      const [ada, bob] = await old.rt.callbacks.links(id, 'decide', 'approve');
      expect(ada.token.startsWith('v1.k1.')).toBe(true);
      const rotated = await startApiServer(await testRuntime({ database: old.rt.db, schema: old.rt.schema, secret: SECRET }), { token: 'tok-tok-tok-tok-2' });
      const dropped = await startApiServer(
        await testRuntime({ database: old.rt.db, schema: old.rt.schema, secret: 'k2:this-is-the-new-key-of-at-least-32-chars' }),
        {
          token: 'tok-tok-tok-tok-3',
        },
      );
      try {
        expect(await post(`${rotated.url}${ada.path}`, { decision: 'approve' })).toMatchObject({ status: 200, body: { status: 'accepted' } });
        expect(await post(`${dropped.url}${bob.path}`, { decision: 'approve' })).toMatchObject({ status: 404 });
      } finally {
        await rotated.close();
        await dropped.close();
      }
    } finally {
      await old.server.close();
    }
  });

  it('a callback key is not a signal anyone may send; links need a key; a link is rate limited', async () => {
    const { rt, server, linkUrl } = await approvalRuntime(true);
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada', 'bob'] });
      await settle(rt);
      await expect(rt.workflow(id).signals.emit('callback:decide.approve', { decision: 'approve' })).rejects.toMatchObject({ code: 'signal_invalid' });
      await expect(rt.callbacks.links(id, 'decide', 'nope')).rejects.toMatchObject({ code: 'callback_term_unknown' });
      await expect(rt.callbacks.links(id, 'nope', 'approve')).rejects.toMatchObject({ code: 'task_not_found' });
      const keyless = await testRuntime({ database: rt.db, schema: rt.schema, secret: undefined });
      if (!process.env.BRAID_SECRET) await expect(keyless.callbacks.links(id, 'decide', 'approve')).rejects.toMatchObject({ code: 'secret_missing' });
      const [ada] = await rt.callbacks.links(id, 'decide', 'approve');
      const statuses: number[] = [];
      for (let i = 0; i < 32; i++) statuses.push((await fetch(linkUrl(ada.path))).status);
      expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
      const limited = await fetch(linkUrl(ada.path));
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });

  it('braid callback-url prints a link per recipient under BRAID_PUBLIC_URL', async () => {
    if (backend !== 'postgres') return;
    const { rt, server } = await approvalRuntime(false);
    try {
      await rt.startWorker();
      const id = await rt.start('approval', { approvers: ['ada', 'bob'] });
      await until(async () => (await rt.workflow(id).task('notify')).state === 'completed');
      const env = { BRAID_SECRET: SECRET, BRAID_PUBLIC_URL: 'https://braid.example.com/' };
      const r = await runCliInProcess(['callback-url', id, 'decide', 'approve', '--database', postgresUrl, '--schema', rt.schema], { env });
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trim().split('\n');
      const links = await rt.callbacks.links(id, 'decide', 'approve');
      expect(lines).toEqual(links.map((l) => `${l.recipient} https://braid.example.com${l.path}`));
      const wrong = await runCliInProcess(['callback-url', id, 'decide', 'nope', '--database', postgresUrl, '--schema', rt.schema], { env });
      expect(wrong).toMatchObject({ code: 1 });
      expect(wrong.stderr).toContain('no callback term "nope"');
    } finally {
      await server.close();
    }
  });
});
