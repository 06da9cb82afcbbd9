import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { braidBin, repoRoot, runCli, runCliInProcess } from '../helpers/cli.js';
import { normalise } from '../helpers/golden.js';
import { mark, printed } from '../helpers/processes.js';
import { backend, postgresUrl, uniqueSchema, until } from '../helpers/runtime.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'braid-cli-'));
  const defs = join(dir, 'definitions');
  mkdirSync(defs);
  writeFileSync(
    join(defs, 'greeting.yaml'),
    `name: greeting
inputs: { type: object, properties: { who: { type: string } }, required: [who] }
tasks:
  hello: { kind: say, args: { text: "hello \${{ inputs.who }}" } }
  slow: { kind: nap, deps: [hello] }
output: { said: "\${{ tasks.hello.output.text }}" }
`,
  );
  writeFileSync(
    join(defs, 'branchy.yaml'),
    `name: branchy
inputs: { type: object, properties: { again: { type: boolean, default: false } } }
tasks:
  hello: { kind: say, args: { text: hi } }
  again:
    kind: say
    deps: [hello]
    when: inputs.again
    args: { text: '\${{ deps["hello"].output.text }} again' }
  join: { kind: say, deps: [again], ignore_skipped_deps: true, args: { text: done } }
output: { said: "\${{ tasks.again.output }}", state: "\${{ tasks.again.state }}" }
`,
  );
  writeFileSync(join(defs, 'doomed.yaml'), 'name: doomed\ntasks:\n  t: { kind: boom, max_attempts: 1 }\n');
  writeFileSync(
    join(defs, 'typed.yaml'),
    'name: typed\ntasks:\n  score:\n    kind: score\n    max_attempts: 1\n    returns: { type: object, required: [risk], properties: { risk: { type: number } } }\n',
  );
  writeFileSync(
    join(dir, 'handlers.mjs'),
    `export default {
  say: async (args) => ({ text: args.text }),
  nap: (args, ctx) => new Promise((resolve, reject) => { console.log('napping ' + ctx.workflowId); const t = setTimeout(resolve, ` +
      `Number(process.env.NAP_MS ?? 10), {}); ctx.signal.addEventListener('abort', () => { clearTimeout(t); reject(ctx.signal.reason); }); }),
  boom: async () => { throw new Error('boom'); },
  score: async () => ({ risk: 'high' }),
  who: async (args, ctx) => { ctx.log.info('decided', { approvals: ctx.wait.terms.approved.signals.length }); return { by: ctx.wait.terms.approved.signals.map((s) => s.payload) }; },
};
`,
  );
  return dir;
}

/** Deploys the project's definitions (`braid register`), then starts `braid worker` (which registers nothing). */
async function startWorker(dir: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; output: () => string }> {
  const registered = await runCliInProcess(['register', ...args], { cwd: dir, env });
  if (registered.code !== 0) throw new Error(`braid register failed: ${registered.stderr}`);
  let out = '';
  const child = spawn(process.execPath, [braidBin, 'worker', '--handlers', 'handlers.mjs', ...args], { cwd: dir, env: { ...process.env, ...env } });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push(child);
  return { child, output: () => out };
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', (code) => resolve(code))));

describe(`CLI against a running worker (${backend})`, () => {
  const db = backend === 'postgres' ? ['--database', postgresUrl, '--schema', uniqueSchema()] : [];
  const env = backend === 'postgres' ? {} : { DATABASE_URL: '' };

  it('migrate, worker, start --wait, status, cancel, graceful stop', async () => {
    const dir = project();
    if (backend === 'postgres') {
      const migrated = await runCliInProcess(['migrate', ...db], { cwd: dir, env });
      expect(migrated.code).toBe(0);
      // every numbered file of migrations/, in order, each once
      const files = readdirSync(join(repoRoot, 'migrations')).filter((f) => f.endsWith('.sql'));
      expect(files.length).toBeGreaterThanOrEqual(15);
      expect(migrated.stdout).toBe(files.map((f) => `applied ${f.replace(/\.sql$/, '')}\n`).join(''));
      expect((await runCliInProcess(['migrate', ...db], { cwd: dir, env })).stdout).toBe('up to date\n');
    }
    const worker = await startWorker(dir, db, { ...env, NAP_MS: '10' });
    await printed(worker, 'running 5 kind(s): boom, nap, say, score, who');
    if (backend === 'pglite') expect(existsSync(join(dir, '.braid', 'api.json'))).toBe(true);

    // this one as a user runs it, a process of its own; the rest in this process (the same main, without a Node start each)
    const started = runCli(['start', 'greeting', '--inputs', '{"who":"ada"}', '--wait', ...db], { cwd: dir, env });
    expect(started.code).toBe(0);
    const [id, output] = started.stdout.trim().split('\n');
    // progress on stderr: a plain line per change when not on a terminal, ending with the final state
    expect(started.stderr.trim().split('\n').at(-1)).toBe(`greeting ${id}: 2/2 tasks done; completed`);
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    expect(JSON.parse(output)).toEqual({ said: 'hello ada' });

    const status = await runCliInProcess(['status', id, '--json', ...db], { cwd: dir, env });
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout);
    expect(parsed.workflow).toMatchObject({ id, name: 'greeting', state: 'completed' });
    expect(parsed.tasks.map((t: { name: string; state: string; pending_reason: unknown }) => [t.name, t.state, t.pending_reason])).toEqual([
      ['hello', 'completed', null],
      ['slow', 'completed', null],
    ]);
    expect((await runCliInProcess(['status', id, ...db], { cwd: dir, env })).stdout).toMatch(/^workflow \w+ {2}greeting {2}completed/);
    // a completed workflow: the default retry has nothing to run; --mode all asks a person at a terminal first
    expect((await runCliInProcess(['retry', id, ...db], { cwd: dir, env })).stdout).toBe(
      `nothing to retry in workflow ${id} (mode failed-and-downstream): it stays on attempt 1\n`,
    );
    const asked: string[] = [];
    const no = await runCliInProcess(['retry', id, '--mode', 'all', ...db], { cwd: dir, env, ask: async (q) => (asked.push(q), 'n') });
    expect(no).toMatchObject({ code: 1, stderr: 'braid: nothing retried\n' });
    expect(asked).toEqual([`workflow ${id} completed: --mode all runs its 2 completed task(s) again, side effects included. Go on? [y/N] `]);
    const yes = await runCliInProcess(['retry', id, '--mode', 'all', '--yes', '--json', ...db], {
      cwd: dir,
      env,
      ask: async () => {
        throw new Error('--yes asks nothing');
      },
    });
    expect(JSON.parse(yes.stdout)).toMatchObject({ attempt: 2, retried: ['hello', 'slow'] });
    await until(async () => JSON.parse((await runCliInProcess(['status', id, '--json', ...db], { cwd: dir, env })).stdout).workflow.state === 'completed');

    // a branch: not taken, the task is skipped and said why; taken, its args read its dep's output
    const skipped = await runCliInProcess(['start', 'branchy', '--wait', ...db], { cwd: dir, env });
    expect(skipped.code).toBe(0);
    const [skippedId, skippedOutput] = skipped.stdout.trim().split('\n');
    expect(JSON.parse(skippedOutput)).toEqual({ said: null, state: 'skipped' });
    expect(skipped.stderr.trim().split('\n').at(-1)).toBe(`branchy ${skippedId}: 3/3 tasks done; completed`);
    expect((await runCliInProcess(['status', skippedId, ...db], { cwd: dir, env })).stdout).toMatch(
      /^again +say +skipped +0\/25 +when was false: inputs\.again$/m,
    );
    const taken = await runCliInProcess(['start', 'branchy', '--inputs', '{"again":true}', '--wait', ...db], { cwd: dir, env });
    expect(taken.code).toBe(0);
    expect(JSON.parse(taken.stdout.trim().split('\n')[1])).toEqual({ said: { text: 'hi again' }, state: 'completed' });

    const doomed = await runCliInProcess(['start', 'doomed', '--wait', ...db], { cwd: dir, env });
    expect(doomed.code).toBe(1);
    expect(doomed.stderr).toMatch(/ended failed/);
    const doomedId = doomed.stdout.trim().split('\n')[0];
    const beforeRetry = mark(worker);
    const retried = await runCliInProcess(['retry', doomedId, '--mode', 'failed-only', '--reset-history', '--json', ...db], { cwd: dir, env });
    expect(retried.stderr).toBe('');
    expect(JSON.parse(retried.stdout)).toMatchObject({ attempt: 2, retried: ['t'] });
    // the worker says the attempt's end once it is recorded, and with it the workflow's
    await printed(worker, new RegExp(`${doomedId} t \\(boom, attempt \\d+\\): failed: boom`), 30_000, beforeRetry);
    expect(JSON.parse((await runCliInProcess(['status', doomedId, '--json', ...db], { cwd: dir, env })).stdout).workflow.state).toBe('failed');
    expect((await runCliInProcess(['retry', doomedId, '--mode', 'sideways', ...db], { cwd: dir, env })).code).toBe(2);

    // an output that breaks its task's returns ends the attempt as output_invalid, and status says where
    const typed = await runCliInProcess(['start', 'typed', '--wait', ...db], { cwd: dir, env });
    expect(typed.code).toBe(1);
    const typedStatus = await runCliInProcess(['status', typed.stdout.trim().split('\n')[0], ...db], { cwd: dir, env });
    expect(typedStatus.stdout).toMatch(
      /^score +score +discarded +1\/1 +output_invalid: the handler's output breaks the returns schema of task "score": \/risk must be number \(type\)$/m,
    );

    expect((await runCliInProcess(['status', 'no-such-id', ...db], { cwd: dir, env })).code).toBe(1);
    expect((await runCliInProcess(['start', 'nope', ...db], { cwd: dir, env })).code).toBe(1);
    expect((await runCliInProcess(['start', 'greeting', '--inputs', '{}', ...db], { cwd: dir, env })).stderr).toContain('[invalid-inputs]');

    // a business key: the same start again finds the workflow (and --wait waits on it); other inputs conflict
    const keyed = await runCliInProcess(['start', 'greeting', '--id', 'greet:ada-1', '--inputs', '{"who":"ada"}', '--wait', ...db], { cwd: dir, env });
    expect(keyed.code).toBe(0);
    expect(keyed.stdout).toBe('greet:ada-1\n{"said":"hello ada"}\n');
    expect(keyed.stderr).not.toContain('already started');
    const again = await runCliInProcess(['start', 'greeting', '--id', 'greet:ada-1', '--inputs', '{"who":"ada"}', '--wait', ...db], { cwd: dir, env });
    expect(again.code).toBe(0);
    expect(again.stdout).toBe('greet:ada-1\n{"said":"hello ada"}\n');
    expect(again.stderr).toContain('braid: workflow greet:ada-1 already started\n');
    const conflict = await runCliInProcess(['start', 'greeting', '--id', 'greet:ada-1', '--inputs', '{"who":"bob"}', ...db], { cwd: dir, env });
    expect(conflict.code).toBe(1);
    expect(conflict.stdout).toBe('');
    expect(conflict.stderr).toContain('workflow greet:ada-1 was already started with other inputs');
    const badId = await runCliInProcess(['start', 'greeting', '--id', 'a b', ...db], { cwd: dir, env });
    expect(badId.code).toBe(2);
    expect(badId.stderr).toContain('--id is 1 to 128 letters');

    worker.child.kill('SIGTERM');
    expect(await exited(worker.child)).toBe(0);
    expect(worker.output()).toContain('stopped');
    if (backend === 'pglite') expect(existsSync(join(dir, '.braid', 'api.json'))).toBe(false);

    const slow = await startWorker(dir, db, { ...env, NAP_MS: '60000' });
    await printed(slow, 'running 5 kind(s)');
    const id2 = (await runCliInProcess(['start', 'greeting', '--inputs', '{"who":"bob"}', ...db], { cwd: dir, env })).stdout.trim();
    await printed(slow, `napping ${id2}`, 30_000);
    const cancelled = await runCliInProcess(['cancel', id2, ...db], { cwd: dir, env });
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toBe(`cancelled workflow ${id2}: tasks cancelled: none; still running, asked to stop: slow\n`);
    await printed(slow, `${id2} slow (nap, attempt 1): `, 30_000);
    expect(JSON.parse((await runCliInProcess(['status', id2, '--json', ...db], { cwd: dir, env })).stdout).workflow.state).toBe('cancelled');
    slow.child.kill('SIGINT');
    expect(await exited(slow.child)).toBe(0);
  }, 240_000);

  it('signal, diagnose and status of a waiting task (golden JSON), with idempotency and attempt errors', async () => {
    const dir = project();
    writeFileSync(
      join(dir, 'definitions', 'review.yaml'),
      `name: review
tasks:
  first: { kind: say, args: { text: first } }
  decide:
    kind: say
    deps: [first]
    args: { text: decided }
    wait:
      expr: approved || sla
      terms:
        approved: { signal: approval, where: 'payload.ok == true', label: Approved by a reviewer }
        sla: { timer: { after_wait_started: 1h }, label: An hour passed }
`,
    );
    writeFileSync(
      join(dir, 'definitions', 'quorum.yaml'),
      `name: quorum
inputs: { type: object, properties: { approvers: { type: array, items: { type: string } } }, required: [approvers] }
tasks:
  decide:
    kind: who
    wait:
      terms:
        approved:
          signal: approval
          where: payload.approved == true
          distinct: payload.approver
          count: "\${{ size(inputs.approvers) }}"
`,
    );
    const worker = await startWorker(dir, db, { ...env, NAP_MS: '10' });
    await printed(worker, 'running 5 kind(s)');
    const id = (await runCliInProcess(['start', 'review', ...db], { cwd: dir, env })).stdout.trim();
    const statusJson = async () => JSON.parse((await runCliInProcess(['status', id, '--json', ...db], { cwd: dir, env })).stdout);
    // first's completion, said once committed, started decide's wait in its transaction
    await printed(worker, `${id} first (say, attempt 1): completed`, 30_000);
    expect((await statusJson()).tasks[1].wait?.phase).toBe('waiting');

    const text = (await runCliInProcess(['status', id, ...db], { cwd: dir, env })).stdout;
    expect(text).toMatch(/decide +say +pending +0\/25 +waiting on approved \|\| sla: approved 0\/1 signal, sla fires at \d{4}-/);
    // audit line ids count every line the file's tests wrote before, and a line has a role and an address only
    // when the command went through the worker's API (the embedded database): not the shape's to pin
    const waiting = await statusJson();
    waiting.audit = waiting.audit.map((a: { id: string }) => ({ ...a, id: '<audit-id>', role: '<role>', source: '<source>' }));
    await expect(normalise(waiting, { 'workflow-id': id })).toMatchFileSnapshot('golden/status-waiting.json');
    const diagnose = await runCliInProcess(['diagnose', id, 'decide', '--json', ...db], { cwd: dir, env });
    expect(diagnose.code).toBe(0);
    await expect(normalise(JSON.parse(diagnose.stdout), { 'workflow-id': id })).toMatchFileSnapshot('golden/diagnose-waiting.json');
    expect((await runCliInProcess(['diagnose', id, 'decide', ...db], { cwd: dir, env })).stdout).toMatch(
      /^task decide of workflow \w+: wait waiting\nexpression: approved \|\| sla {2}=> {2}false\n/,
    );

    const sent = await runCliInProcess(
      ['signal', id, 'approval', '--payload', '{"ok":false}', '--idempotency-key', 'k1', '--source', '{"by":"cli"}', '--json', ...db],
      {
        cwd: dir,
        env,
      },
    );
    expect(sent.code).toBe(0);
    const row = JSON.parse(sent.stdout);
    expect(row).toMatchObject({ key: 'approval', attempt: 1, payload: { ok: false }, source: { by: 'cli' }, idempotency_key: 'k1' });
    const replay = await runCliInProcess(['signal', id, 'approval', '--payload', '{"ok":false}', '--idempotency-key', 'k1', '--json', ...db], {
      cwd: dir,
      env,
    });
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout)).toEqual(row);
    expect(replay.stderr).toContain('replayed');
    const mismatch = await runCliInProcess(['signal', id, 'approval', '--payload', '{"ok":true}', '--idempotency-key', 'k1', ...db], { cwd: dir, env });
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toMatch(/^signal "approval" with idempotency key "k1" was already emitted \(id \d+\) with a different payload\n$/);
    const late = await runCliInProcess(['signal', id, 'approval', '--payload', '{"ok":true}', '--attempt', '2', ...db], { cwd: dir, env });
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/attempt 2, but the workflow is on attempt 1/);
    expect((await runCliInProcess(['signal', id, ...db], { cwd: dir, env })).code).toBe(2);
    expect((await runCliInProcess(['signal', id, 'approval', '--payload', '{oops', ...db], { cwd: dir, env })).stderr).toMatch(
      /^braid: --payload is not valid JSON/,
    );
    expect((await runCliInProcess(['diagnose', id, 'nope', ...db], { cwd: dir, env })).code).toBe(1);
    expect((await runCliInProcess(['diagnose', id, 'first', ...db], { cwd: dir, env })).stderr).toMatch(/task "first" has no wait/);
    expect((await runCliInProcess(['diagnose', id, 'decide', '--signal-scan-limit', '0', ...db], { cwd: dir, env })).code).toBe(2);
    expect((await runCliInProcess(['signal', 'no-such-id', 'approval', ...db], { cwd: dir, env })).code).toBe(1);
    // a typo'd key is refused with a hint, and nothing is stored; --any-key stores it on purpose
    const typo = await runCliInProcess(['signal', id, 'aproval', '--payload', '{"ok":true}', ...db], { cwd: dir, env });
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain(`no task of workflow ${id} waits on signal key "aproval" (did you mean "approval"?)`);
    const anyKey = await runCliInProcess(['signal', id, 'audit_note', '--payload', '{"by":"ops"}', '--any-key', '--json', ...db], { cwd: dir, env });
    expect(anyKey.code).toBe(0);
    expect(JSON.parse(anyKey.stdout)).toMatchObject({ key: 'audit_note', payload: { by: 'ops' } });

    const approve = await runCliInProcess(['signal', id, 'approval', '--payload', '{"ok":true}', ...db], { cwd: dir, env });
    expect(approve.code).toBe(0);
    expect(approve.stdout).toMatch(new RegExp(`^stored signal \\d+ "approval" \\(attempt 1\\) for workflow ${id}\\n$`));
    expect(approve.stderr).toContain('resolved the wait of decide');
    await printed(worker, `${id} decide (say, attempt 1): completed`, 30_000);
    expect((await statusJson()).workflow.state).toBe('completed');
    const resolved = (await statusJson()).tasks[1].wait;
    expect(resolved.phase).toBe('resolved');
    expect(resolved.evidence.terms.map((t: { name: string; value: boolean }) => [t.name, t.value])).toEqual([
      ['approved', true],
      ['sla', false],
    ]);
    // a finished workflow takes no more signals; an accepted one replayed is still answered
    const toFinished = await runCliInProcess(['signal', id, 'approval', '--payload', '{"ok":true}', ...db], { cwd: dir, env });
    expect(toFinished.code).toBe(1);
    expect(toFinished.stderr).toBe(`workflow ${id} is completed: it takes no more signals (retry it first to run it again)\n`);
    expect((await runCliInProcess(['signal', id, 'approval', '--payload', '{"ok":false}', '--idempotency-key', 'k1', ...db], { cwd: dir, env })).code).toBe(0);
    // values Postgres cannot store: exit 1 naming the field, not an internal error
    const nul = await runCliInProcess(['signal', id, 'approval', '--payload', '{"note":"a\\u0000b"}', ...db], { cwd: dir, env });
    expect(nul.code).toBe(1);
    expect(nul.stderr).toBe("the signal's payload holds U+0000 at /note, which Postgres cannot store\n");
    const lone = await runCliInProcess(['signal', id, 'approval', '--source', '["\\ud800"]', ...db], { cwd: dir, env });
    expect(lone.stderr).toBe("the signal's source holds an unpaired surrogate U+D800 at /0, which Postgres cannot store\n");
    const inputs = await runCliInProcess(['start', 'greeting', '--inputs', '{"who":"\\u0000"}', ...db], { cwd: dir, env });
    expect(inputs.code).toBe(1);
    expect(inputs.stderr).toBe('the inputs hold U+0000 at /who, which Postgres cannot store\n');

    // a quorum of distinct approvers, its count from the inputs: one approver twice is not two; the handler's
    // ctx.wait names exactly the rows that counted
    const quorum = (await runCliInProcess(['start', 'quorum', '--inputs', '{"approvers":["grace","linus"]}', ...db], { cwd: dir, env })).stdout.trim();
    const approveAs = (approver: string, approved = true) =>
      runCliInProcess(['signal', quorum, 'approval', '--payload', JSON.stringify({ approved, approver }), ...db], { cwd: dir, env });
    for (const [who, approved] of [
      ['grace', true],
      ['grace', true],
      ['linus', false],
    ] as const)
      expect((await approveAs(who, approved)).code).toBe(0);
    expect((await runCliInProcess(['status', quorum, ...db], { cwd: dir, env })).stdout).toMatch(
      /^decide +who +pending +0\/25 +waiting on approved: approved 1\/2 distinct \(grace\)$/m,
    );
    expect((await approveAs('linus')).stderr).toContain('resolved the wait of decide');
    await printed(worker, `${quorum} decide (who, attempt 1): completed`, 30_000);
    const decided = JSON.parse((await runCliInProcess(['status', quorum, '--json', ...db], { cwd: dir, env })).stdout).tasks[0];
    expect(decided.output).toEqual({
      by: [
        { approved: true, approver: 'grace' },
        { approved: true, approver: 'linus' },
      ],
    });
    // the handler's log line, and braid's, through braid logs (text, JSON, and --follow of a finished workflow)
    const logs = await runCliInProcess(['logs', quorum, 'decide', ...db], { cwd: dir, env });
    expect(logs.stdout).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z {2}decide#1 {2}info {3}\[braid\] attempt 1 started on worker \S+ {2}\{"worker":"\S+"\}\n\d{4}-[\d\-T:.]+Z {2}decide#1 {2}info {3}decided {2}\{"approvals":2\}\n$/,
    );
    const json = await runCliInProcess(['logs', quorum, '--json', '--follow', ...db], { cwd: dir, env });
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).message),
    ).toEqual([expect.stringMatching(/^attempt 1 started/), 'decided']);
    expect((await runCliInProcess(['logs', quorum, '--attempt', '1', ...db], { cwd: dir, env })).stderr).toBe('braid: --attempt needs a TASK\n');
    expect((await runCliInProcess(['logs', quorum, 'nope', ...db], { cwd: dir, env })).stderr).toBe(`workflow ${quorum} has no task "nope"\n`);
    worker.child.kill('SIGTERM');
    expect(await exited(worker.child)).toBe(0);
  }, 240_000);

  it('a hostile handler cannot take the worker down: thrown proxies, throwing getters, stray promise rejections', async () => {
    const dir = project();
    writeFileSync(
      join(dir, 'definitions', 'hostile.yaml'),
      'name: hostile\ntasks:\n  trap: { kind: trap, max_attempts: 2, retry: { initial: 10ms } }\n  stray: { kind: stray }\n',
    );
    writeFileSync(
      join(dir, 'handlers.mjs'),
      `export default {
  say: async (args) => ({ text: args.text }),
  nap: async () => ({}),
  boom: async () => { throw new Error('boom'); },
  trap: async () => { throw new Proxy({}, { get() { throw new Error('trap'); }, getPrototypeOf() { throw new Error('trap'); } }); },
  stray: async () => { Promise.reject(new Error('nobody awaits me')); return { ok: true }; },
};
`,
    );
    const worker = await startWorker(dir, db, env);
    await printed(worker, 'running 5 kind(s)');
    const run = await runCliInProcess(['start', 'hostile', '--wait', '--timeout', '60s', ...db], { cwd: dir, env });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/ended failed/);
    const id = run.stdout.trim().split('\n')[0];
    const status = JSON.parse((await runCliInProcess(['status', id, '--json', ...db], { cwd: dir, env })).stdout);
    expect(status.tasks.map((t: { name: string; state: string }) => [t.name, t.state])).toEqual([
      ['trap', 'discarded'],
      ['stray', 'completed'],
    ]);
    expect(status.tasks[0].errors[1].message).toBe('the handler threw a value that cannot be described (reading it threw)');
    await printed(worker, 'unhandled promise rejection', 10_000);
    expect(worker.output()).toMatch(/warning: unhandled promise rejection \(a handler's promise that nothing awaited\?\): nobody awaits me/);
    expect(worker.child.exitCode).toBeNull();
    // and it goes on working
    const after = await runCliInProcess(['start', 'greeting', '--inputs', '{"who":"still here"}', '--wait', ...db], { cwd: dir, env });
    expect(after.code).toBe(0);
    worker.child.kill('SIGTERM');
    expect(await exited(worker.child)).toBe(0);
  }, 120_000);

  it('recovery timings are flags, checked like any other', async () => {
    const dir = project();
    const bad = await runCliInProcess(['worker', '--handlers', 'handlers.mjs', '--dead-after', '1s', '--heartbeat', '2s'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('braid: --dead-after must be longer than --heartbeat (a live worker would be taken for dead)\n');
    expect((await runCliInProcess(['worker', '--handlers', 'handlers.mjs', '--leader-lease', 'soon'], { cwd: dir })).stderr).toBe(
      'braid: --leader-lease must be a duration from 500 ms to 1 day, such as 2s or 500ms, not "soon"\n',
    );
    expect((await runCliInProcess(['dev', '--heartbeat', '10ms'], { cwd: dir })).code).toBe(2);
    expect((await runCliInProcess(['worker', '--help'], { cwd: dir })).stdout).toMatch(/--dead-after DURATION +a worker silent this long is dead/);
    expect((await runCliInProcess(['worker', '--handlers', 'handlers.mjs', '--port', '70000'], { cwd: dir })).stderr).toBe(
      'braid: --port must be a port number from 0 to 65535, not "70000"\n',
    );
  });

  it.runIf(backend === 'postgres')("on Postgres, --port serves the worker's API: a callback link is answered there", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-worker-port-'));
    mkdirSync(join(dir, 'definitions'));
    writeFileSync(
      join(dir, 'definitions', 'nod.yaml'),
      'name: nod\ntasks:\n  ok:\n    kind: done\n    wait: { terms: { yes: { callback: { expires: 1h, schema: { type: object } } } } }\n',
    );
    writeFileSync(join(dir, 'handlers.mjs'), 'export default { done: async () => ({ ok: true }) };\n');
    const env = { BRAID_SECRET: 'w1:a-worker-key-of-at-least-thirty-two-chars' };
    const db = ['--database', postgresUrl, '--schema', uniqueSchema()];
    expect((await runCliInProcess(['register', ...db], { cwd: dir, env })).code).toBe(0);
    const id = (await runCliInProcess(['start', 'nod', ...db], { cwd: dir, env })).stdout.trim();
    const path = (await runCliInProcess(['callback-url', id, 'ok', 'yes', ...db], { cwd: dir, env })).stdout.trim();
    expect(path).toMatch(/^\/callbacks\/v1\.w1\./);
    const port = await freePort();
    const worker = spawn(process.execPath, [braidBin, 'worker', '--handlers', 'handlers.mjs', '--port', String(port), ...db], {
      cwd: dir,
      env: { ...process.env, ...env },
    });
    children.push(worker);
    let out = '';
    worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await printed({ child: worker, output: () => out }, 'running 1 kind(s)');
    const answer = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ status: 'accepted', resolved: ['ok'] });
    const status = await runCliInProcess(['status', id, '--json', ...db], { cwd: dir, env });
    expect(JSON.parse(status.stdout).tasks[0].wait.phase).toBe('resolved');
    worker.kill('SIGTERM');
    expect(await exited(worker)).toBe(0);
  });

  it.runIf(backend === 'pglite')('on the embedded database, --port is where the worker serves the project its local API', async () => {
    const dir = project();
    const port = await freePort();
    const worker = spawn(process.execPath, [braidBin, 'worker', '--handlers', 'handlers.mjs', '--port', String(port), '--metrics-port', '0'], {
      cwd: dir,
      env: { ...process.env, DATABASE_URL: '', BRAID_METRICS_TOKEN: 'scrape-token-0123456789' },
    });
    children.push(worker);
    let out = '';
    worker.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await printed({ child: worker, output: () => out }, 'running 5 kind(s)');
    expect(JSON.parse(readFileSync(join(dir, '.braid', 'api.json'), 'utf8')).url).toBe(`http://127.0.0.1:${port}`);
    // the project's commands reach the worker there
    expect(await runCliInProcess(['list'], { cwd: dir, env: { DATABASE_URL: '' } })).toMatchObject({ code: 0 });
    // and --metrics-port serves its metrics as Prometheus text
    const metricsUrl = /metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(out)![1];
    expect((await fetch(metricsUrl)).status).toBe(401);
    expect((await hostGet(metricsUrl, 'evil.example:80')).status).toBe(403);
    // the local API has no metrics: a 404, not the UI's page
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
    const text = await (await fetch(metricsUrl, { headers: { authorization: 'Bearer scrape-token-0123456789' } })).text();
    expect(text).toContain('# TYPE braid_tasks_started_total counter');
    expect(text).toContain('# TYPE braid_queue_depth gauge');
    worker.kill('SIGTERM');
    expect(await exited(worker)).toBe(0);
  });

  it('usage and connection errors are one line with their exit codes', async () => {
    const dir = project();
    expect((await runCliInProcess(['worker'], { cwd: dir })).code).toBe(2);
    expect((await runCliInProcess(['worker', '--handlers', 'missing.mjs'], { cwd: dir })).stderr).toMatch(
      /^braid: cannot load handlers: handlers module not found/,
    );
    const bad = await runCliInProcess(['status', 'x', '--database', 'postgres://nobody:wrong@127.0.0.1:1/none'], { cwd: dir });
    expect(bad.code).toBe(3);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});

/** A GET with the Host header given (fetch may not set it). */
function hostGet(url: string, host: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { host } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on('error', reject);
  });
}
