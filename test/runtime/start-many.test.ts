import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import { BatchRowError, WorkflowConflictError } from '../../src/runtime/errors.js';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';
import { databaseConfig, project } from '../helpers/project.js';
import { backend, drivenRuntime, final, settle } from '../helpers/runtime.js';

const ORDER = `name: order
inputs:
  type: object
  properties:
    n: { type: integer }
    sku: { type: string, default: none }
  required: [n]
tasks:
  pick: { kind: pick, args: { n: "\${{ inputs.n }}" } }
  ship: { kind: ship, deps: [pick], args: { n: "\${{ deps.pick.output.n }}" } }
output: { shipped: "\${{ tasks.ship.output.n }}" }
`;
const APPROVAL = `name: approval
tasks:
  decide:
    kind: pick
    wait: { terms: { ok: { signal: approve } } }
`;
/** Its plans do not depend on its inputs: a batch compiles one row and stamps its tasks for the others. */
const STAMPED = readFileSync(join(repoRoot, 'test/fixtures/stamped.yaml'), 'utf8');
const definitions = { order: ORDER, approval: APPROVAL, stamped: STAMPED };
const handlers = { pick: async (a: { n: number }) => ({ n: a.n }), ship: async (a: { n: number }) => ({ n: a.n * 10 }) };

async function count(rt: Awaited<ReturnType<typeof drivenRuntime>>): Promise<{ workflows: number; tasks: number }> {
  const { rows } = await rt.db.query<{ w: number; t: number }>(
    `SELECT (SELECT count(*)::int FROM "${rt.schema}".workflows) AS w, (SELECT count(*)::int FROM "${rt.schema}".tasks) AS t`,
  );
  return { workflows: rows[0].w, tasks: rows[0].t };
}

describe(`startMany: a batch of starts in one statement (${backend})`, () => {
  it('starts every row with its own inputs, in the rows order; they run as single starts do', async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    const started = await rt.startMany(
      'order',
      Array.from({ length: 120 }, (_, n) => ({ n })),
    );
    expect(started).toHaveLength(120);
    expect(started.every((s) => !s.existing)).toBe(true);
    expect(new Set(started.map((s) => s.id)).size).toBe(120);
    expect(await count(rt)).toEqual({ workflows: 120, tasks: 240 });
    expect((await rt.workflow(started[7].id).status()).workflow.inputs).toEqual({ n: 7, sku: 'none' });
    await rt.startWorker();
    await settle(rt);
    for (const i of [0, 60, 119]) expect((await final(rt, started[i].id)).output).toEqual({ shipped: i * 10 });
  });

  it('a root wait becomes active at the start, as for a single start', async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    const [a] = await rt.startMany('approval', [{}, {}]);
    await rt.startWorker();
    await rt.workflow(a.id).signals.emit('approve', {});
    await settle(rt);
    expect((await final(rt, a.id)).state).toBe('completed');
  });

  it('a stamped batch stores, column for column, what single starts of the same inputs store; keys, repeats and bad rows as ever', async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    const inputs = [{ n: 1 }, {}, { n: 7 }];
    const single: string[] = [];
    for (const i of inputs) single.push(await rt.start('stamped', i));
    const batch = (await rt.startMany('stamped', inputs)).map((s) => s.id);
    // every column of the tables, read from the schema: a column added later is compared too
    const rows = async (table: string, key: string, ids: string[]) => {
      const { rows } = await rt.db.query<{ r: Record<string, unknown> }>(
        `SELECT to_jsonb(x) - ARRAY['id', 'workflow_id'] AS r FROM "${rt.schema}".${table} x WHERE ${key} = ANY($1::text[]) ORDER BY array_position($1::text[], ${key}), ${{ workflows: 'id', tasks: 'name' }[table] ?? 'task, name'}`,
        [ids],
      );
      return rows.map((r) => r.r);
    };
    expect(await rows('workflows', 'id', batch)).toEqual(await rows('workflows', 'id', single));
    // the root waits' timers, as single starts make them (a batch activates its roots' waits together)
    const timers = await rows('timers', 'workflow_id', batch);
    expect(timers).toHaveLength(3);
    expect(timers).toEqual(await rows('timers', 'workflow_id', single));
    const tasks = await rows('tasks', 'workflow_id', batch);
    expect(tasks).toHaveLength(15);
    expect(tasks).toEqual(await rows('tasks', 'workflow_id', single));
    // the tasks in the plan's order (their ids follow it, as reads order by them)
    const order = async (ids: string[]) =>
      (
        await rt.db.query<{ names: string[] }>(
          `SELECT array_agg(name ORDER BY id) AS names FROM "${rt.schema}".tasks WHERE workflow_id = ANY($1::text[]) GROUP BY workflow_id`,
          [ids],
        )
      ).rows.map((r) => r.names);
    expect(await order(batch)).toEqual(await order(single));
    // the root wait of each is active, as a single start makes it
    expect(tasks.filter((t) => t.name === 'e' && t.wait_started_at !== null)).toHaveLength(3);

    await rt.start('stamped', { n: 1 }, { id: 'k-1' });
    const keyed = await rt.startMany('stamped', [{ n: 1 }, { n: 2 }, { n: 2 }, {}], { ids: ['k-1', 'k-2', 'k-2', undefined] });
    expect(keyed.map((k) => k.existing)).toEqual([true, false, true, false]);
    const conflict = await rt.startMany('stamped', [{ n: 3 }, { n: 1, s: 'other' }], { ids: ['k-3', 'k-1'] }).catch((e: unknown) => e);
    expect((conflict as BatchRowError).row).toBe(1);
    const bad = await rt.startMany('stamped', [{ n: 1 }, { n: 'two' }]).catch((e: unknown) => e);
    expect((bad as BatchRowError).row).toBe(1);
    expect((bad as BatchRowError).code).toBe('inputs_invalid');
    expect((await count(rt)).workflows).toBe(9);
  });

  it('business keys per row: taken with the same inputs is existing, within the batch too; other inputs conflict and nothing starts', async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    await rt.start('order', { n: 1 }, { id: 'o-1' });
    const started = await rt.startMany('order', [{ n: 1, sku: 'none' }, { n: 2 }, { n: 2 }, { n: 3 }], { ids: ['o-1', 'o-2', 'o-2', undefined] });
    expect(started.slice(0, 3)).toEqual([
      { id: 'o-1', existing: true },
      { id: 'o-2', existing: false },
      { id: 'o-2', existing: true },
    ]);
    expect(started[3].existing).toBe(false);
    expect(await count(rt)).toEqual({ workflows: 3, tasks: 6 });

    const inBatch = await rt.startMany('order', [{ n: 4 }, { n: 5 }, { n: 6 }], { ids: ['o-4', 'o-5', 'o-4'] }).catch((e: unknown) => e);
    expect(inBatch).toBeInstanceOf(BatchRowError);
    expect((inBatch as BatchRowError).row).toBe(2);
    expect((inBatch as BatchRowError).code).toBe('workflow_conflict');
    expect((inBatch as BatchRowError).cause).toBeInstanceOf(WorkflowConflictError);
    const stored = await rt.startMany('order', [{ n: 7 }, { n: 99 }], { ids: ['o-7', 'o-1'] }).catch((e: unknown) => e);
    expect((stored as BatchRowError).row).toBe(1);
    expect((stored as Error).message).toBe('row 2: workflow o-1 was already started with other inputs (start it with the same inputs, or choose another id)');
    expect(await count(rt)).toEqual({ workflows: 3, tasks: 6 });
  });

  it('a row that does not compile, or holds what Postgres cannot store, is named; nothing of the batch starts', async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    const bad = await rt.startMany('order', [{ n: 1 }, { n: 'two' }, { n: 3 }]).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BatchRowError);
    expect((bad as BatchRowError).row).toBe(1);
    expect((bad as BatchRowError).code).toBe('inputs_invalid');
    const unstorable = await rt.startMany('order', [{ n: 1 }, { n: 2, sku: 'a\u0000b' }]).catch((e: unknown) => e);
    expect((unstorable as BatchRowError).code).toBe('value_unstorable');
    const badId = await rt.startMany('order', [{ n: 1 }], { ids: ['a b'] }).catch((e: unknown) => e);
    expect((badId as BatchRowError).code).toBe('workflow_id_invalid');
    expect(await count(rt)).toEqual({ workflows: 0, tasks: 0 });
    expect(await rt.startMany('order', [])).toEqual([]);
    await expect(rt.startMany('nope', [{}])).rejects.toMatchObject({ code: 'workflow_not_registered' });
  });

  it("in the caller's transaction: a rollback leaves nothing, a commit everything", async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    const rolledBack = await rt.db
      .transaction(async (tx) => {
        await rt.startMany('order', [{ n: 1 }, { n: 2 }], { tx, ids: ['t-1', 't-2'] });
        throw new Error('the caller changed its mind');
      })
      .catch((e: unknown) => e);
    expect((rolledBack as Error).message).toBe('the caller changed its mind');
    expect(await count(rt)).toEqual({ workflows: 0, tasks: 0 });
    await rt.db.transaction(async (tx) => {
      await rt.startMany('order', [{ n: 1 }, { n: 2 }], { tx, ids: ['t-1', 't-2'] });
    });
    expect(await count(rt)).toEqual({ workflows: 2, tasks: 4 });
  });

  it('POST /api/workflows/batch: 201 with each row, the row at fault named with its diagnostics', async () => {
    const rt = await drivenRuntime({ definitions, handlers });
    const token = 'b'.repeat(48);
    const server = await startApiServer(rt, { token, heartbeatMs: 100, pollMs: 60_000, minIntervalMs: 10, listenLingerMs: 300 });
    try {
      const post = async (body: unknown) => {
        const res = await fetch(`${server.url}/api/workflows/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      const ok = await post({ name: 'order', workflows: [{ inputs: { n: 1 }, id: 'h-1' }, { inputs: { n: 2 } }] });
      expect(ok.status).toBe(201);
      expect((ok.body.workflows as { id: string; existing: boolean }[])[0]).toEqual({ id: 'h-1', existing: false });
      const again = await post({ name: 'order', workflows: [{ inputs: { n: 1 }, id: 'h-1' }] });
      expect(again).toEqual({ status: 200, body: { workflows: [{ id: 'h-1', existing: true }] } });
      const bad = await post({ name: 'order', workflows: [{ inputs: { n: 3 } }, { inputs: { n: 'x' } }] });
      expect(bad.status).toBe(422);
      expect(bad.body).toMatchObject({ code: 'inputs_invalid', row: 1, error: 'inputs do not fit' });
      expect((bad.body.diagnostics as { message: string }[])[0].message).toContain('/n');
      expect((await post({ name: 'order', workflows: {} })).status).toBe(400);
      expect((await post({ name: 'order', workflows: [{ inputs: {}, id: 7 }] })).status).toBe(400);
      expect(await count(rt)).toEqual({ workflows: 2, tasks: 4 });
    } finally {
      await server.close();
    }
  });
});

describe(`braid start --inputs-file (${backend})`, () => {
  it('starts a line each in batches, prints the ids in order; a bad line in the middle is named and nothing of its batch starts', async () => {
    const { config, env } = databaseConfig();
    const dir = project({ 'braid.config.yaml': `definitions: [workflows]\n${config}`, 'workflows/order.yaml': ORDER });
    expect((await runCliInProcess(['register'], { cwd: dir, env })).code).toBe(0);
    const lines = Array.from({ length: 25 }, (_, n) => JSON.stringify({ n, sku: `s${n}` }));
    writeFileSync(join(dir, 'ok.ndjson'), `${lines.join('\n')}\n\n`);
    const ok = await runCliInProcess(['start', 'order', '--inputs-file', 'ok.ndjson', '--batch', '10', '--id-field', 'sku'], { cwd: dir, env });
    expect(ok.stderr).toBe('braid: started 25 workflows of order from ok.ndjson\n');
    expect(ok.stdout.trim().split('\n')).toEqual(Array.from({ length: 25 }, (_, n) => `s${n}`));
    const again = await runCliInProcess(['start', 'order', '--inputs-file', 'ok.ndjson', '--id-field', 'sku'], { cwd: dir, env });
    expect(again.stderr).toBe('braid: started 0 workflows of order from ok.ndjson (25 already there)\n');

    const bad = [...lines.slice(0, 14).map((l) => l.replace(/"s(\d+)"/, '"b$1"')), '{"n": "fourteen", "sku": "b14"}', ...lines.slice(15)];
    writeFileSync(join(dir, 'bad.ndjson'), bad.join('\n'));
    const refused = await runCliInProcess(['start', 'order', '--inputs-file', 'bad.ndjson', '--batch', '10'], { cwd: dir, env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'bad.ndjson:15: inputs /n: must be integer [invalid-inputs] (nothing of lines 11-20 started; the 10 workflows of lines before 11 started)\n',
    );
    expect(refused.stdout.trim().split('\n')).toHaveLength(10);
    const listed = await runCliInProcess(['list', '--json', '--limit', '100'], { cwd: dir, env });
    expect((JSON.parse(listed.stdout) as { workflows: unknown[] }).workflows).toHaveLength(35);

    writeFileSync(join(dir, 'broken.ndjson'), '{"n": 1}\n{"n": \n');
    const broken = await runCliInProcess(['start', 'order', '--inputs-file', 'broken.ndjson'], { cwd: dir, env });
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/^broken\.ndjson:2: not valid JSON: .* \(nothing of lines 1-2 started\)\n$/);
    const usage = await runCliInProcess(['start', 'order', '--inputs-file', 'ok.ndjson', '--wait'], { cwd: dir, env });
    expect(usage.code).toBe(2);
    expect((await runCliInProcess(['start', 'order', '--inputs-file', 'missing.ndjson'], { cwd: dir, env })).stderr).toBe(
      'braid: cannot read inputs file missing.ndjson: ENOENT\n',
    );
  });
});
