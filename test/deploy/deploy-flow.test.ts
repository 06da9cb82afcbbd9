import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { printed, projectWorker } from '../helpers/processes.js';
import { databaseConfig, project, write } from '../helpers/project.js';
import { backend, until } from '../helpers/runtime.js';

const V1 = `name: refund
tasks:
  review:
    kind: record_review
    wait: { terms: { reviewed: { signal: refund_review } } }
  settle: { kind: settle_refund, deps: [review] }
`;

// the kind and the signal key are renamed
const V2 = `name: refund
tasks:
  review:
    kind: record_review
    wait: { terms: { reviewed: { signal: review_done } } }
  settle: { kind: settle_payment, deps: [review] }
`;

const handlers = (...kinds: string[]) => `export default Object.fromEntries(${JSON.stringify(kinds)}.map((k) => [k, async () => ({ ran: k })]));\n`;

const SCORING = `name: scoring
tasks:
  score: { kind: score }
  decide: { kind: decide, deps: [score], when: 'deps["score"].output.risc < 0.5' }
`;

describe(`a deploy that renames a kind and a signal key, end to end through the CLI (${backend})`, () => {
  it('plan refuses without the old handler, warns with it; register; upgrade moves the runs; the new key resolves ' +
    'them; the old version drains; a when: typo is repaired with retry --on-current', async () => {
    const db = databaseConfig();
    const env = db.env;
    const dir = project({
      'braid.config.yaml': `definitions: definitions\nhandlers: handlers.mjs\n${db.config}`,
      'definitions/refund.yaml': V1,
      'handlers.mjs': handlers('record_review', 'settle_refund'),
    });
    const cli = (...args: string[]) => runCliInProcess(args, { cwd: dir, env });
    const allCompleted = async (ids: string[]) => {
      for (const id of ids) if (JSON.parse((await cli('status', id, '--json')).stdout).workflow.state !== 'completed') return false;
      return true;
    };
    expect((await cli('register')).code).toBe(0);
    for (const id of ['r1', 'r2', 'r3']) expect(await cli('start', 'refund', '--id', id)).toMatchObject({ code: 0, stdout: `${id}\n` });
    const v1 = JSON.parse((await cli('versions', 'refund', '--json')).stdout)[0].hash as string;

    // v2 drops the old kind's handler: plan names the kind, the version and the running count; register refuses
    write(dir, 'definitions/refund.yaml', V2);
    write(dir, 'handlers.mjs', handlers('record_review', 'settle_payment'));
    const refused = await cli('plan');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(
      `error: kind "settle_refund" has no handler in handlers.mjs: 3 running on ${v1.slice(0, 12)} need it [deploy-missing-handler]`,
    );
    const register = await cli('register');
    expect(register.code).toBe(1);
    expect(register.stderr).toContain('nothing was registered (--force registers anyway)');
    expect(JSON.parse((await cli('versions', 'refund', '--json')).stdout)).toHaveLength(1);

    // with the old handler kept: only the warning that old runs wait on the old key
    write(dir, 'handlers.mjs', handlers('record_review', 'settle_refund', 'settle_payment'));
    const planned = await cli('plan');
    expect(planned.code).toBe(0);
    expect(planned.stdout).toContain(`warning: 3 running on ${v1.slice(0, 12)} wait on signal key "refund_review", which this version no longer declares`);
    const registered = await cli('register');
    expect(registered.code).toBe(0);
    expect(registered.stdout).toMatch(new RegExp(`^refund new ([0-9a-f]{12})\\n {2}${v1.slice(0, 12)}: 3 running, keep handlers for settle_refund\\n$`));
    const v2 = JSON.parse((await cli('versions', 'refund', '--json')).stdout)[0].hash as string;
    expect((await cli('versions', 'refund')).stdout).toMatch(
      new RegExp(`^${v2.slice(0, 12)} .* current .*\\n${v1.slice(0, 12)} .* draining \\(3 running\\) .*\\n$`),
    );

    // upgrade: the dry run lists the three, the upgrade moves them
    const dry = await cli('upgrade', 'refund', '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(
      `refund -> ${v2.slice(0, 12)} (dry run: nothing ` +
        `changes)\n${['r1', 'r2', 'r3'].map((id) => `  ${id}  ${v1.slice(0, 12)}  would move\n`).join('')}3 would move, 0 cannot move\n`,
    );
    expect(JSON.parse((await cli('status', 'r1', '--json')).stdout).workflow.definition_hash).toBe(v1);
    const moved = await cli('upgrade', 'refund', '--format', 'json');
    expect(moved.code).toBe(0);
    expect(JSON.parse(moved.stdout).results.map((r: { id: string; status: string }) => `${r.id} ${r.status}`)).toEqual(['r1 moved', 'r2 moved', 'r3 moved']);
    expect((await cli('status', 'r1')).stdout).toMatch(new RegExp(`\\nupgraded \\S+: ${v1.slice(0, 12)} -> ${v2.slice(0, 12)}\\n`));

    // the new key's signal resolves them, and the renamed kind's handler runs; the old key is no longer waited on
    let worker = projectWorker(dir, env);
    try {
      await worker.ready;
      expect(await cli('signal', 'r1', 'refund_review')).toMatchObject({ code: 1, stderr: expect.stringContaining('waits on signal key "refund_review"') });
      for (const id of ['r1', 'r2', 'r3']) expect((await cli('signal', id, 'review_done')).code).toBe(0);
      // the worker says each last task's end once it is recorded, and with it the workflow's
      for (const id of ['r1', 'r2', 'r3']) await printed(worker.proc, `${id} settle (settle_payment, attempt 1): completed`);
      expect(await allCompleted(['r1', 'r2', 'r3'])).toBe(true);
      const settle = JSON.parse((await cli('status', 'r2', '--json')).stdout).tasks.find((t: { name: string }) => t.name === 'settle');
      expect(settle).toMatchObject({ kind: 'settle_payment', output: { ran: 'settle_payment' } });
      expect((await cli('versions', 'refund')).stdout).toMatch(new RegExp(`\\n${v1.slice(0, 12)} .* drained .*\\n$`));

      // the repair flow: a typo in a when: discards the runs
      await worker.stop();
      write(dir, 'definitions/scoring.yaml', SCORING);
      write(
        dir,
        'handlers.mjs',
        handlers('record_review', 'settle_payment', 'score', 'decide').replace('async () => ({ ran: k })', 'async () => ({ ran: k, risk: 0.1 })'),
      );
      expect((await cli('register')).code).toBe(0);
      worker = projectWorker(dir, env);
      await worker.ready;
      for (const id of ['s1', 's2']) expect(await cli('start', 'scoring', '--id', id, '--wait', '--timeout', '60s')).toMatchObject({ code: 1 });
      expect(JSON.parse((await cli('status', 's1', '--json')).stdout).tasks[1]).toMatchObject({ name: 'decide', state: 'discarded' });
      await worker.stop();
      write(dir, 'definitions/scoring.yaml', SCORING.replace('risc', 'risk'));
      expect((await cli('register')).code).toBe(0);
      worker = projectWorker(dir, env);
      await worker.ready;
      // a plain retry runs the pinned version, and says so
      const plain = await cli('retry', 's2', '--mode', 'failed-only');
      expect(plain).toMatchObject({
        code: 0,
        stderr: expect.stringMatching(/^braid: workflow s2 runs version [0-9a-f]{12}; current is [0-9a-f]{12}; --on-current to retry on it\n$/),
      });
      await until(async () => JSON.parse((await cli('status', 's2', '--json')).stdout).workflow.state === 'failed', 60_000, 200);
      for (const id of ['s1', 's2']) expect(await cli('retry', id, '--on-current', '--mode', 'failed-only')).toMatchObject({ code: 0, stderr: '' });
      for (const id of ['s1', 's2']) await printed(worker.proc, new RegExp(`${id} decide \\(decide, attempt \\d+\\): completed`));
      expect(await allCompleted(['s1', 's2'])).toBe(true);
    } finally {
      await worker.stop();
    }
  }, 240_000);
});

/** `braid worker` in the project, ready once it says it runs. */
