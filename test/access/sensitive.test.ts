import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import { braidBin, repoRoot, runCliInProcess } from '../helpers/cli.js';
import { tempProject } from '../helpers/dev-process.js';
import { exited } from '../helpers/processes.js';
import { backend, definitionsDir, drivenRuntime, final, postgresUrl, settle, testRuntime, uniqueSchema, until } from '../helpers/runtime.js';

const KEYS = `k1:${randomBytes(32).toString('base64')}`;
const PAN = '4111111111111111';
const TOKEN = 'tok_live_abcdef123456';

const PAY = `name: pay
inputs:
  type: object
  required: [customer, card]
  properties:
    customer: { type: string }
    card:
      type: object
      required: [number]
      properties:
        number: { type: string, sensitive: true }
tasks:
  charge:
    kind: charge
    args: { pan: "\${{ inputs.card.number }}", note: "card \${{ inputs.card.number }} of \${{ inputs.customer }}", customer: "\${{ inputs.customer }}" }
    returns:
      type: object
      required: [token, last4]
      properties:
        token: { type: string, sensitive: true }
        last4: { type: string }
  receipt:
    kind: receipt
    deps: [charge]
    args: { token: "\${{ deps.charge.output.token }}", last4: "\${{ deps.charge.output.last4 }}" }
`;

const PIN = 'pin-9731-secret';
const APPROVE = `name: approve
inputs:
  type: object
  required: [card, who]
  properties:
    card: { type: string, sensitive: true }
    who: { type: string }
triggers:
  - event: card.verified
    inputs: { card: "\${{ event.payload.card }}", who: "\${{ event.payload.who }}" }
tasks:
  gate:
    kind: gate
    wait:
      expr: ok
      terms:
        ok:
          signal: approval
          where: size(payload.pin) > 5
          schema:
            type: object
            required: [by, pin]
            properties: { by: { type: string }, pin: { type: string, sensitive: true } }
  spawn:
    deps: [gate]
    start: { workflow: child, inputs: { card: "\${{ inputs.card }}" } }
output: { card: "last \${{ inputs.card }}", who: "\${{ inputs.who }}" }
`;
const CHILD = `name: child
inputs: { type: object, required: [card], properties: { card: { type: string, sensitive: true } } }
tasks:
  use: { kind: use, args: { card: "\${{ inputs.card }}" } }
`;
const CARD_EVENTS = {
  'card.verified': {
    schema: { type: 'object', required: ['card', 'who'], properties: { card: { type: 'string', sensitive: true }, who: { type: 'string' } } },
  },
};

describe(`sensitive data (${backend})`, () => {
  it("signal and event payloads, a run's output and its children's pending starts are stored sealed, and a rotation moves them", async () => {
    const used: unknown[] = [];
    const rt = await drivenRuntime({ keys: KEYS, handlers: { gate: async () => ({}), use: async (args) => void used.push(args) } });
    expect((await rt.registerDefinitions(definitionsDir({ approve: APPROVE, child: CHILD }), { events: CARD_EVENTS })).validation.diagnostics).toEqual([]);
    await rt.startWorker();
    const emitted = await rt.emit('card.verified', { card: PAN, who: 'ada' }, { id: 'evt-1' });
    const run = emitted.event.outcomes[0];
    if (run?.outcome !== 'started') throw new Error(`the event did not start a run: ${JSON.stringify(emitted)}`);
    const id = run.id;
    const s = `"${rt.schema}"`;
    // an effect row lives until it is applied: a copy of each as it was written is kept to look at (watched
    // before the signal that resolves the gate: the worker may run on and start the child at once)
    await rt.db.query(`CREATE TABLE ${s}.effects_seen (payload text)`);
    await rt.db.query(`CREATE FUNCTION ${s}.keep_effect() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${s}.effects_seen VALUES (NEW.payload::text); RETURN NEW; END $$`);
    await rt.db.query(`CREATE TRIGGER keep AFTER INSERT ON ${s}.effects FOR EACH ROW WHEN (NEW.kind = 'start') EXECUTE FUNCTION ${s}.keep_effect()`);
    // a payload its term's schema refuses is refused, and stored nowhere
    await expect(rt.workflow(id).signals.emit('approval', { by: 'bob' })).rejects.toMatchObject({ code: 'signal_invalid' });
    await expect(rt.workflow(id).signals.emit('approval', { by: 'bob', pin: 7 })).rejects.toThrow(
      /does not fit the schema of term gate.ok: \/pin must be string/,
    );
    await settle(rt);
    // the wait reads the sealed pin in clear: a wrong one does not pass, the right one does; a replay matches
    await rt.workflow(id).signals.emit('approval', { by: 'eve', pin: 'no' });
    await rt.workflow(id).signals.emit('approval', { by: 'bob', pin: PIN }, { idempotencyKey: 'i1' });
    expect((await rt.workflow(id).signals.emit('approval', { pin: PIN, by: 'bob' }, { idempotencyKey: 'i1' })).replayed).toBe(true);
    await expect(rt.workflow(id).signals.emit('approval', { by: 'bob', pin: 'other' }, { idempotencyKey: 'i1' })).rejects.toMatchObject({
      code: 'signal_payload_mismatch',
    });
    await settle(rt);
    const effects = await rt.db.query<{ t: string }>(`SELECT payload AS t FROM ${s}.effects_seen`);
    expect((await final(rt, id)).state).toBe('completed');
    expect(used).toEqual([{ card: PAN }]);
    expect((await rt.workflow(id).status({ reveal: true, actor: 'check' })).workflow.output).toEqual({ card: `last ${PAN}`, who: 'ada' });
    const stored = await rt.db.query<{ t: string }>(
      `SELECT payload::text AS t FROM ${s}.signals UNION ALL SELECT payload::text FROM ${s}.events
       UNION ALL SELECT coalesce(output::text, '') || inputs::text FROM ${s}.workflows UNION ALL SELECT args::text FROM ${s}.tasks`,
    );
    const all = [...stored.rows, ...effects.rows].map((r) => r.t).join('\n');
    expect(effects.rows).toHaveLength(1);
    for (const secret of [PAN, PIN]) expect(all).not.toContain(secret);
    expect(all).toContain('"by": "bob"');
    expect(all).toContain('"who": "ada"');
    // shown: redacted
    const status = await rt.workflow(id).status();
    expect(status.workflow.output).toEqual({ card: '[redacted]', who: 'ada' });
    expect(JSON.stringify(status)).not.toContain(PIN);
    const server = await startApiServer(rt, { token: 'server-token-0123456789' });
    try {
      const viewer = (await rt.users.add('vic', { role: 'viewer' })).token;
      const get = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${viewer}` } })).text();
      for (const path of [`/api/workflows/${id}/signals`, `/api/workflows/${id}/tasks/gate/signals`, '/api/events/recent']) {
        const shown = await get(path);
        expect(shown).toContain('[redacted]');
        for (const secret of [PAN, PIN]) expect(shown).not.toContain(secret);
      }
    } finally {
      await server.close();
    }
    // a rotation moves the signals' and the event's envelopes too
    const fresh = `k9:${randomBytes(32).toString('base64')}`;
    const rotated = await testRuntime({ schema: rt.schema, keys: `${fresh},${KEYS}` });
    await rotated.keys.rotate({ actor: 'check' });
    const after = await rt.db.query<{ t: string }>(
      `SELECT string_agg(payload::text, '') AS t FROM (SELECT payload FROM ${s}.signals UNION ALL SELECT payload FROM ${s}.events) x`,
    );
    expect(after.rows[0].t).not.toContain('braid:enc:v1:k1:');
    expect(after.rows[0].t.match(/braid:enc:v1:k9:/g)).toHaveLength(3);
    const alone = await testRuntime({ schema: rt.schema, keys: fresh });
    const signals = await alone.workflow(id).signals.list();
    expect(signals.signals.map((x) => x.payload)).toEqual([
      { by: 'eve', pin: 'no' },
      { by: 'bob', pin: PIN },
    ]);
  });

  it('is stored encrypted, given to handlers in clear, shown [redacted], and revealed to an admin with an audit line', async () => {
    const seen: Record<string, unknown>[] = [];
    const rt = await drivenRuntime({
      keys: KEYS,
      definitions: { pay: PAY },
      handlers: {
        charge: async (args: Record<string, unknown>, ctx) => {
          seen.push(args);
          ctx.log.info(`charging ${args.pan} for ${args.customer}`, { pan: args.pan, note: args.note, customer: args.customer });
          return { token: TOKEN, last4: PAN.slice(-4) };
        },
        receipt: async (args: Record<string, unknown>) => {
          seen.push(args);
          return {};
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('pay', { customer: 'ada', card: { number: PAN } });
    await settle(rt);
    expect((await final(rt, id)).state).toBe('completed');
    // the handlers had them in clear
    expect(seen).toEqual([
      { pan: PAN, note: `card ${PAN} of ada`, customer: 'ada' },
      { token: TOKEN, last4: '1111' },
    ]);
    // the database has no plaintext of either, anywhere a row holds them
    const s = `"${rt.schema}"`;
    const stored = await rt.db.query<{ t: string }>(
      `SELECT inputs::text AS t FROM ${s}.workflows WHERE id = $1
       UNION ALL SELECT coalesce(args::text, '') || coalesce(output::text, '') FROM ${s}.tasks WHERE workflow_id = $1
       UNION ALL SELECT message || coalesce(fields::text, '') FROM ${s}.task_logs WHERE workflow_id = $1`,
      [id],
    );
    const all = stored.rows.map((r) => r.t).join('\n');
    expect(all).not.toContain(PAN);
    expect(all).not.toContain(TOKEN);
    expect(all).toContain('braid:enc:v1:k1:');
    expect(all).toContain('"customer": "ada"');
    // the handler's log line keeps what is not sensitive; a value made from one (the note, stored sealed) is redacted whole
    expect((await rt.workflow(id).logs({ task: 'charge' })).lines.find((l) => l.source === 'handler')).toMatchObject({
      message: 'charging [redacted] for ada',
      fields: { pan: '[redacted]', note: '[redacted]', customer: 'ada' },
    });
    // shown: redacted, in status and through the API
    const status = await rt.workflow(id).status();
    expect(status.workflow.inputs).toEqual({ customer: 'ada', card: { number: '[redacted]' } });
    expect(status.tasks.find((t) => t.name === 'charge')).toMatchObject({
      args: { pan: '[redacted]', note: '[redacted]', customer: 'ada' },
      output: { token: '[redacted]', last4: '1111' },
    });
    expect(JSON.stringify(status)).not.toContain(PAN);
    // a search by a sensitive input's value could never match: refused, naming it; by another input it works
    await expect(rt.listWorkflows({ name: 'pay', inputs: [{ path: 'card.number', value: PAN }] })).rejects.toMatchObject({
      code: 'operation_invalid',
      message: expect.stringContaining('inputs.card.number is sensitive in workflow "pay"'),
    });
    await expect(rt.bulk.create({ action: 'cancel', filter: { inputs: [{ path: 'card.number', value: PAN }] } })).rejects.toMatchObject({
      code: 'operation_invalid',
    });
    expect((await rt.listWorkflows({ inputs: [{ path: 'customer', value: 'ada' }] })).workflows.map((w) => w.id)).toEqual([id]);
    const server = await startApiServer(rt, { token: 'server-token-0123456789' });
    try {
      const viewer = (await rt.users.add('vic', { role: 'viewer' })).token;
      const admin = (await rt.users.add('root', { role: 'admin' })).token;
      const get = (token: string, path: string) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
      const shown = await (await get(viewer, `/api/workflows/${id}`)).text();
      expect(shown).not.toContain(PAN);
      expect(shown).toContain('[redacted]');
      expect((await get(viewer, `/api/workflows/${id}?reveal=1`)).status).toBe(403);
      const revealed = await (await get(admin, `/api/workflows/${id}?reveal=1`)).json();
      expect(revealed.workflow.inputs.card.number).toBe(PAN);
      expect((await rt.auditTrail({ action: 'reveal' }))[0]).toMatchObject({ actor: 'root', role: 'admin', workflow_id: id });
      expect(await (await get(viewer, `/api/workflows/${id}/wait?timeout_ms=0`)).text()).not.toContain(PAN);
    } finally {
      await server.close();
    }
  });

  it('a definition that declares sensitive fields is refused without data keys, naming the first field', async () => {
    const rt = await testRuntime({});
    await expect(rt.registerDefinitions(definitionsDir({ pay: PAY }))).rejects.toThrow(
      'workflow "pay" declares inputs.card.number sensitive, and no data keys are configured to encrypt it (config keys:, or BRAID_KEYS)',
    );
    expect(await rt.definitionVersions()).toEqual([]);
  });

  it.runIf(backend === 'postgres')('braid register refuses without keys (exit 1); braid status redacts, --reveal shows and audits', async () => {
    const schema = uniqueSchema();
    const dir = tempProject({ 'pay.yaml': PAY });
    const db = ['--database', postgresUrl, '--schema', schema];
    const refused = await runCliInProcess(['register', ...db], { cwd: dir, env: { BRAID_KEYS: '' } });
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('declares inputs.card.number sensitive')]);
    const env = { BRAID_KEYS: KEYS };
    expect((await runCliInProcess(['register', ...db], { cwd: dir, env })).code).toBe(0);
    const started = await runCliInProcess(['start', 'pay', '--inputs', JSON.stringify({ customer: 'ada', card: { number: PAN } }), ...db], { cwd: dir, env });
    const id = started.stdout.trim();
    const plain = await runCliInProcess(['status', id, '--json', ...db], { cwd: dir, env });
    expect(plain.stdout).not.toContain(PAN);
    expect(JSON.parse(plain.stdout).workflow.inputs.card.number).toBe('[redacted]');
    const shown = await runCliInProcess(['status', id, '--json', '--reveal', '--reason', 'chargeback', ...db], { cwd: dir, env });
    expect(JSON.parse(shown.stdout).workflow.inputs.card.number).toBe(PAN);
    const audit = JSON.parse((await runCliInProcess(['audit', '--action', 'reveal', '--json', ...db], { cwd: dir, env })).stdout);
    expect(audit).toMatchObject([{ action: 'reveal', actor: 'tester', reason: 'chargeback', workflow_id: id }]);
  });

  it.runIf(backend === 'postgres')(
    'braid keys rotate moves every sealed value to the new key; killed mid-way, a rerun finishes it and nothing is unreadable',
    async () => {
      const schema = uniqueSchema();
      const old = await testRuntime({ schema, keys: KEYS, definitions: { pay: PAY } });
      const n = 250;
      const ids = (
        await old.startMany(
          'pay',
          Array.from({ length: n }, (_, i) => ({ customer: `c${i}`, card: { number: `${PAN}${i}` } })),
        )
      ).map((r) => r.id);
      const fresh = `k2:${randomBytes(32).toString('base64')}`;
      const both = `${fresh},${KEYS}`;
      const db = ['--database', postgresUrl, '--schema', schema];
      // killed once it has told of its first page
      const child = spawn(process.execPath, [braidBin, 'keys', 'rotate', ...db], { cwd: repoRoot, env: { ...process.env, BRAID_KEYS: both } });
      await new Promise<void>((resolve, reject) => {
        child.stderr.on('data', (b: Buffer) => {
          if (b.toString().includes('workflows looked at')) resolve();
        });
        child.on('exit', () => reject(new Error('braid keys rotate ended before it was killed')));
      });
      child.kill('SIGKILL');
      const rerun = await runCliInProcess(['keys', 'rotate', '--json', '--reason', 'yearly', ...db], { env: { BRAID_KEYS: both } });
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(JSON.parse(rerun.stdout).scanned).toBe(n);
      const text = (await old.db.query<{ t: string }>(`SELECT string_agg(inputs::text, '') AS t FROM "${schema}".workflows`)).rows[0].t;
      expect(text).not.toContain('braid:enc:v1:k1:');
      expect(text.match(/braid:enc:v1:k2:/g)).toHaveLength(n);
      // the tasks that need a key name the new one: a worker given only k2 claims them
      const needs = await old.db.query<{ keys: string[] | null; n: number }>(`SELECT needs_keys AS keys, count(*)::int AS n FROM "${schema}".tasks GROUP BY 1`);
      expect(needs.rows.filter((r) => r.keys !== null).map((r) => r.keys)).toEqual([['k2']]);
      // the new key alone reads every value: nothing was left under the old one, nothing lost
      const after = await testRuntime({ schema, keys: fresh });
      for (const [i, id] of ids.entries()) {
        if (i % 50 !== 0) continue;
        const shown = await after.workflow(id).status({ reveal: true, actor: 'check' });
        expect(shown.workflow.inputs).toEqual({ customer: `c${i}`, card: { number: `${PAN}${i}` } });
        expect(shown.tasks[0].args).toMatchObject({ pan: `${PAN}${i}` });
      }
      expect((await after.auditTrail({ action: 'keys.rotate' }))[0]).toMatchObject({ actor: 'tester', reason: 'yearly', target: 'k2' });
    },
  );

  it.runIf(backend === 'postgres')(
    'a worker without the data key never claims a task that needs it (marked at insert, or by the first worker that met it), says so once; status says why; a worker with the key runs it',
    async () => {
      const schema = uniqueSchema();
      const charged: unknown[] = [];
      const PLAIN = 'name: plain\ntasks:\n  note: { kind: receipt }\n';
      const rt = await testRuntime({
        schema,
        keys: KEYS,
        definitions: { pay: PAY, plain: PLAIN },
        handlers: { charge: async (args) => (charged.push(args), { token: 't', last4: '1111' }), receipt: async () => ({}) },
      });
      const marked = await rt.start('pay', { customer: 'ada', card: { number: PAN } });
      const charge = (id: string) => rt.workflow(id).task('charge');
      expect((await charge(marked)).needs_keys).toEqual(['k1']);
      // a task whose sealed values its row does not name (a dep's sealed output, say): the first keyless claim finds them
      const unmarked = await rt.start('pay', { customer: 'bob', card: { number: PAN } });
      await rt.db.query(`UPDATE "${schema}".tasks SET needs_keys = NULL WHERE workflow_id = $1`, [unmarked]);
      const plain = await rt.start('plain');
      const dir = tempProject(
        { 'pay.yaml': PAY, 'plain.yaml': PLAIN },
        { 'handlers.mjs': 'export default { charge: async () => ({ token: "x", last4: "0000" }), receipt: async () => ({}) };\n' },
      );
      // another process, given no keys (this one holds them for the whole test process)
      const worker = spawn(process.execPath, [braidBin, 'worker', '--handlers', 'handlers.mjs', '--database', postgresUrl, '--schema', schema], {
        cwd: dir,
        env: { ...process.env, BRAID_KEYS: '', DATABASE_URL: '' },
      });
      let said = '';
      worker.stdout.on('data', (b: Buffer) => (said += b.toString()));
      worker.stderr.on('data', (b: Buffer) => (said += b.toString()));
      const keyLines = async (id: string) =>
        (await rt.workflow(id).logs({ task: 'charge' })).lines.filter((l) => l.source === 'braid' && l.message.includes('data key'));
      try {
        // it says at start what it leaves, and claims from the same queue: the plain run completes on it
        await until(() => said.includes('open task(s) of this worker'), 30_000);
        expect(said).toMatch(/1 open task\(s\) of this worker's kinds hold values sealed with data key k1, which this worker was not given/);
        expect((await rt.workflow(plain).waitUntilFinal({ timeoutMs: 30_000, pollMs: 50 })).state).toBe('completed');
        // the unmarked task: claimed once, given back at once and marked, with a line saying which key it waits for
        await until(async () => (await charge(unmarked)).needs_keys !== null && (await charge(unmarked)).state === 'available', 30_000);
        expect(await charge(unmarked)).toMatchObject({ state: 'available', attempt: 0, errors: [], needs_keys: ['k1'] });
        expect((await keyLines(unmarked)).map((l) => l.message)).toEqual([
          expect.stringMatching(/^waits for a worker with data key k1: worker \S+ was not given it/),
        ]);
        await until(() => said.includes('which this worker was not given: it gives them back'), 30_000);
        // the marked task was never claimed: no attempt, no line
        expect(await charge(marked)).toMatchObject({ state: 'available', attempt: 0, errors: [] });
        expect(await keyLines(marked)).toEqual([]);
        // braid status says why both wait
        for (const id of [marked, unmarked]) {
          const shown = (await rt.workflow(id).status()).tasks.find((t) => t.name === 'charge');
          expect(shown?.pending_reason).toBe('waits for a worker with data key k1: no live worker of kind charge has it (config keys:, or BRAID_KEYS)');
        }
        const diagnose = await runCliInProcess(['diagnose', marked, 'charge', '--database', postgresUrl, '--schema', schema]);
        expect(diagnose.code).not.toBe(0);
        expect(diagnose.stderr).toContain('it is available and not started yet: waits for a worker with data key k1: no live worker of kind charge has it');
        expect(said.match(/sealed with data key k1, which this worker was not given: it gives them back/g)).toHaveLength(1);
      } finally {
        worker.kill('SIGTERM');
        await exited(worker);
      }
      // a worker with the key: both run, on their values in clear
      await rt.startWorker();
      for (const id of [marked, unmarked]) expect((await rt.workflow(id).waitUntilFinal({ timeoutMs: 30_000, pollMs: 50 })).state).toBe('completed');
      expect(charged).toMatchObject([{ pan: PAN }, { pan: PAN }]);
      expect((await keyLines(marked)).length).toBe(0);
      expect((await keyLines(unmarked)).length).toBe(1);
    },
    120_000,
  );
});
