import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { printed, projectWorker } from '../helpers/processes.js';
import { databaseConfig, project, write } from '../helpers/project.js';
import { backend } from '../helpers/runtime.js';

const V1 = `name: order
inputs: { type: object, required: [fail], properties: { fail: { type: boolean } } }
tasks:
  reserve_stock: { kind: reserve }
  check_fraud: { kind: fraud, args: { fail: "\${{ inputs.fail }}" }, max_attempts: 5, retry: { initial: 1h, jitter: false } }
  approve: { kind: approve, deps: [reserve_stock], wait: { terms: { ok: { signal: approved } } } }
  ship: { kind: ship, deps: [approve] }
`;

// reserve_stock and check_fraud are gone: stock is reserved elsewhere now, and fraud is checked before the start
const V2 = `name: order
inputs: { type: object, required: [fail], properties: { fail: { type: boolean } } }
tasks:
  approve: { kind: approve, wait: { terms: { ok: { signal: approved } } } }
  ship: { kind: ship, deps: [approve] }
`;

const HANDLERS = `export default {
  reserve: async () => ({ reserved: 3 }),
  fraud: async (args) => { if (args.fail) throw new Error('fraud service down'); return { clean: true }; },
  approve: async () => ({ ok: true }),
  ship: async () => ({ shipped: true }),
};
`;

interface Task {
  name: string;
  state: string;
  output: unknown;
  removed_in: string | null;
}

describe(`moves that keep history: removed tasks that ended stay, --cancel-removed (${backend})`, () => {
  it('a removed completed task moves with its history shown; a retryable one refuses the move until --cancel-removed', async () => {
    const db = databaseConfig();
    const dir = project({
      'braid.config.yaml': `definitions: definitions\nhandlers: handlers.mjs\n${db.config}`,
      'definitions/order.yaml': V1,
      'handlers.mjs': HANDLERS,
    });
    const cli = (...args: string[]) => runCliInProcess(args, { cwd: dir, env: db.env });
    const tasks = async (id: string): Promise<Record<string, Task>> =>
      Object.fromEntries((JSON.parse((await cli('status', id, '--json')).stdout).tasks as Task[]).map((t) => [t.name, t]));
    expect((await cli('register')).code).toBe(0);
    expect((await cli('start', 'order', '--id', 'stuck', '--inputs', '{"fail":true}')).code).toBe(0);
    expect((await cli('start', 'order', '--id', 'clean', '--inputs', '{"fail":false}')).code).toBe(0);
    const v1 = JSON.parse((await cli('versions', 'order', '--json')).stdout)[0].hash as string;

    let worker = projectWorker(dir, db.env);
    await worker.ready;
    // the worker says each attempt's end once it is recorded
    for (const line of [
      'stuck check_fraud (fraud, attempt 1): failed',
      'stuck reserve_stock (reserve, attempt 1): completed',
      'clean check_fraud (fraud, attempt 1): completed',
    ])
      await printed(worker.proc, line);
    const [stuckBefore, cleanBefore] = [await tasks('stuck'), await tasks('clean')];
    expect([stuckBefore.check_fraud.state, stuckBefore.reserve_stock.state, cleanBefore.check_fraud.state]).toEqual(['retryable', 'completed', 'completed']);
    await worker.stop();

    write(dir, 'definitions/order.yaml', V2);
    const plan = await cli('plan');
    expect(plan.stdout).toContain(
      `warning: 1 of 2 running on ${v1.slice(0, 12)} cannot move to this version with braid upgrade: task "check_fraud" is retryable, ` +
        'and this version has no such task (first: stuck) [deploy-unmovable]',
    );
    expect(plan.stdout).not.toMatch(/or move them: braid upgrade order\b(?! --cancel-removed)/);
    expect((await cli('register')).code).toBe(0);
    const v2 = JSON.parse((await cli('versions', 'order', '--json')).stdout)[0].hash as string;

    // without --cancel-removed: the clean run moves (its removed tasks had ended), the stuck one does not
    const dry = await cli('upgrade', 'order', '--dry-run');
    expect(dry.stdout).toContain(`  clean  ${v1.slice(0, 12)}  would move (reserve_stock kept as history, check_fraud kept as history)\n`);
    expect(dry.stdout).toContain(
      `  stuck  ${v1.slice(0, 12)}  cannot move: task "check_fraud" is retryable, and the version to move to has no task "check_fraud" ` +
        '(renamed_from: says what it became); --cancel-removed cancels it\n',
    );
    const moved = await cli('upgrade', 'order');
    expect(moved.code).toBe(1);
    expect(moved.stdout).toContain('1 moved, 1 cannot move');
    const clean = await tasks('clean');
    expect(clean.reserve_stock).toMatchObject({ state: 'completed', output: { reserved: 3 }, removed_in: v2 });
    expect(clean.check_fraud).toMatchObject({ state: 'completed', output: { clean: true }, removed_in: v2 });
    const shown = (await cli('status', 'clean')).stdout;
    expect(shown).toMatch(new RegExp(`\\nreserve_stock +reserve +completed +1/25 +removed in ${v2.slice(0, 12)}; output \\{"reserved":3\\}\\n`));
    expect(shown).toContain(`upgraded`);

    // --cancel-removed: the retryable task is cancelled into the history, and the run moves
    const forced = await cli('upgrade', 'order', '--cancel-removed');
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(`  stuck  ${v1.slice(0, 12)}  moved (reserve_stock kept as history, check_fraud cancelled, kept as history)\n`);
    const stuck = await tasks('stuck');
    expect(stuck.check_fraud).toMatchObject({ state: 'cancelled', removed_in: v2 });
    expect(stuck.reserve_stock).toMatchObject({ state: 'completed', removed_in: v2 });

    // both finish on the new version; the history rows take no part
    worker = projectWorker(dir, db.env);
    await worker.ready;
    try {
      for (const id of ['stuck', 'clean']) expect((await cli('signal', id, 'approved')).code).toBe(0);
      for (const id of ['stuck', 'clean']) {
        await printed(worker.proc, `${id} ship (ship, attempt 1): completed`);
        expect(JSON.parse((await cli('status', id, '--json')).stdout).workflow.state).toBe('completed');
      }
    } finally {
      await worker.stop();
    }
    expect((await tasks('stuck')).ship).toMatchObject({ state: 'completed', removed_in: null });

    // a retry runs the version's tasks again, never the history
    const retried = await cli('retry', 'clean', '--mode', 'all', '--json');
    expect(retried.code).toBe(0);
    expect((JSON.parse(retried.stdout).retried as string[]).sort()).toEqual(['approve', 'ship']);
    expect((await tasks('clean')).reserve_stock).toMatchObject({ state: 'completed', output: { reserved: 3 }, removed_in: v2 });
  }, 240_000);
});
