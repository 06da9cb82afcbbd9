import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NonRetryableError } from '../../src/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { advance, backend, drivenRuntime, final, settle } from '../helpers/runtime.js';

const PAY = `name: pay
inputs: { type: object, properties: { order: { type: string } } }
on_failure:
  start:
    workflow: dead_letter
    inputs:
      failed_id: "\${{ failed.id }}"
      why: "\${{ failed.task }}: \${{ failed.error }} (attempt \${{ failed.attempt }})"
      order: "\${{ inputs.order }}"
retention: { failed: keep }
tasks:
  charge: { kind: charge }
  ship: { kind: ship, deps: [charge] }
`;
const DEAD_LETTER = `name: dead_letter
inputs:
  type: object
  required: [failed_id, why]
  properties: { failed_id: { type: string }, why: { type: string }, order: { type: string } }
tasks:
  page: { kind: page }
`;
const PLAIN = 'name: plain\ntasks:\n  charge: { kind: charge }\n';

async function runtime(definitions: Record<string, string> = { pay: PAY, dead_letter: DEAD_LETTER, plain: PLAIN }) {
  const rt = await drivenRuntime({
    definitions,
    retention: { closedMs: 3_600_000, cancelledMs: 3_600_000 },
    handlers: {
      charge: async () => {
        throw new NonRetryableError('card declined', { code: 'card_declined' });
      },
      ship: async () => ({}),
      page: async () => ({ paged: true }),
    },
  });
  await rt.startWorker();
  return rt;
}

describe(`dead letters and failure hooks (${backend})`, () => {
  it('a failed run starts its hook once per failure, with failed.* in its inputs; a retried run that fails again starts another', async () => {
    const rt = await runtime();
    const id = await rt.start('pay', { order: 'o-17' });
    expect((await final(rt, id)).state).toBe('failed');
    await settle(rt);
    const first = await rt.workflow(`${id}.on_failure.1`).load();
    expect(first).toMatchObject({ name: 'dead_letter', state: 'completed' });
    expect(first.inputs).toEqual({ failed_id: id, why: 'charge: card declined (attempt 1)', order: 'o-17' });
    const hooks = async () => (await rt.listWorkflows({ name: 'dead_letter' })).workflows.map((w) => w.id).sort();
    expect(await hooks()).toEqual([`${id}.on_failure.1`]);

    await rt.workflow(id).retry({ mode: 'failed_only' });
    expect((await final(rt, id)).state).toBe('failed');
    await settle(rt);
    expect(await hooks()).toEqual([`${id}.on_failure.1`, `${id}.on_failure.2`]);
    expect((await rt.workflow(`${id}.on_failure.2`).load()).inputs).toMatchObject({ why: 'charge: card declined (attempt 2)' });
  });

  it('retention: { failed: keep } keeps the failed run whole past the runtime period; a run without it goes', async () => {
    const rt = await runtime();
    const kept = await rt.start('pay', { order: 'o-1' });
    const gone = await rt.start('plain');
    expect((await final(rt, kept)).state).toBe('failed');
    expect((await final(rt, gone)).state).toBe('failed');
    await advance(rt, 2 * 3_600_000);
    await rt.maintenance({ only: ['deleted'] });
    await expect(rt.workflow(gone).load()).rejects.toThrow(/not found|no workflow/i);
    const w = await rt.workflow(kept).status();
    expect(w.workflow.state).toBe('failed');
    expect(w.tasks.map((t) => [t.name, t.state])).toEqual([
      ['charge', 'discarded'],
      ['ship', 'cancelled'],
    ]);
    expect((await rt.listWorkflows({ state: 'failed', name: 'pay' })).workflows.map((x) => x.id)).toEqual([kept]);
  });

  it("a hook that cannot start leaves the failure as it is and says why in the run's history", async () => {
    // an int where the hook's schema wants a string: known only when the value is rendered
    const broken = PAY.replace('failed_id: "${{ failed.id }}"', 'failed_id: "${{ failed.attempt }}"');
    const rt = await runtime({ pay: broken, dead_letter: DEAD_LETTER });
    const id = await rt.start('pay', { order: 'o-2' });
    expect((await final(rt, id)).state).toBe('failed');
    const status = await rt.workflow(id).status();
    expect(status.audit).toMatchObject([
      { actor: 'braid', action: 'on_failure.error', reason: expect.stringMatching(/^on_failure could not start dead_letter: /) },
    ]);
    expect((await rt.listWorkflows({ name: 'dead_letter' })).workflows).toEqual([]);
  });
});

const GROUPED = `name: pay
inputs: { type: object, required: [fail_at], properties: { order: { type: string }, fail_at: { type: string } } }
on_failure:
  workflow: page
  inputs: { count: "\${{ failed.count }}", group: "\${{ failed.group }}", last: "\${{ failed.id }}" }
  group_by: "\${{ failed.task }}"
  window: 10m
tasks:
  charge: { kind: step, args: { fail: "\${{ inputs.fail_at == 'charge' }}" } }
  ship: { kind: step, deps: [charge], args: { fail: "\${{ inputs.fail_at == 'ship' }}" } }
`;
const PAGE = `name: page
inputs:
  type: object
  required: [count, group, last]
  properties: { count: { type: integer }, group: { type: string }, last: { type: string } }
tasks:
  send: { kind: page }
`;

describe(`on_failure grouped by a key per window (${backend})`, () => {
  it('one incident of many failures pages once at once and once when the window ends, with the count; a quiet window ends the group', async () => {
    const rt = await drivenRuntime({
      definitions: { pay: GROUPED, page: PAGE },
      handlers: {
        step: async (args) => {
          if ((args as { fail: boolean }).fail) throw new NonRetryableError('declined');
          return {};
        },
        page: async () => ({}),
      },
    });
    await rt.startWorker();
    const pages = async () => {
      const ids = (await rt.listWorkflows({ name: 'page', limit: 500 })).workflows.map((w) => w.id);
      return Promise.all(ids.map(async (id) => (await rt.workflow(id).load()).inputs as { count: number; group: string; last: string }));
    };
    const fail = async (n: number, at: string) => {
      const ids = (
        await rt.startMany(
          'pay',
          Array.from({ length: n }, (_, i) => ({ order: `o-${i}`, fail_at: at })),
        )
      ).map((r) => r.id);
      for (const id of ids) expect((await final(rt, id)).state).toBe('failed');
      await settle(rt);
      return ids;
    };
    const first = await fail(60, 'charge');
    // the first failure pages at once; the other 59 wait for the window's end
    expect(await pages()).toEqual([{ count: 1, group: 'charge', last: expect.any(String) }]);
    const other = await fail(1, 'ship');
    expect((await pages()).map((p) => p.group).sort()).toEqual(['charge', 'ship']);
    await advance(rt, 10 * 60_000);
    await settle(rt);
    const charge = (await pages()).filter((p) => p.group === 'charge');
    expect(charge.map((p) => p.count).sort((a, b) => a - b)).toEqual([1, 59]);
    expect(first).toContain(charge.find((p) => p.count === 59)!.last);
    expect(other).toEqual([(await pages()).find((p) => p.group === 'ship')!.last]);

    // failures in the next window are counted for its end; a window with none ends the group
    await fail(3, 'charge');
    expect((await pages()).length).toBe(3);
    await advance(rt, 10 * 60_000);
    await settle(rt);
    expect(
      (await pages())
        .filter((p) => p.group === 'charge')
        .map((p) => p.count)
        .sort((a, b) => a - b),
    ).toEqual([1, 3, 59]);
    await advance(rt, 10 * 60_000);
    await rt.maintenance();
    const { rows } = await rt.db.query(`SELECT count(*)::int AS n FROM "${rt.schema}".failure_groups`);
    expect(rows[0]).toEqual({ n: 0 });
    // a failure after the group ended pages at once again
    await fail(1, 'charge');
    expect((await pages()).length).toBe(5);
  });
});

describe.runIf(backend === 'pglite')('on_failure and retention, checked offline', () => {
  it('braid validate refuses an unknown hook workflow, a failed.* field that does not exist, and a retention that is no duration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-dead-letters-'));
    mkdirSync(join(dir, 'definitions'));
    writeFileSync(join(dir, 'definitions', 'dead_letter.yaml'), DEAD_LETTER);
    const bad = PAY.replace('workflow: dead_letter', 'workflow: dead_letters').replace('failed.task', 'failed.step').replace('failed: keep', 'failed: forever');
    writeFileSync(join(dir, 'definitions', 'pay.yaml'), bad);
    const r = await runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/pay\.yaml:5:15: error: on_failure starts unknown workflow "dead_letters" \[unknown-workflow\]/);
    expect(r.stdout).toMatch(/pay\.yaml:8:\d+: error: unknown field "step" \(fields: id, name, error, task, attempt, count, group\) \[cel-unknown-ref\]/);
    expect(r.stdout).toMatch(/pay\.yaml:10:\d+: error: retention\.failed/);
    writeFileSync(join(dir, 'definitions', 'pay.yaml'), PAY.replace('      failed_id: "${{ failed.id }}"\n', ''));
    const missing = await runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(missing.stdout).toMatch(/pay\.yaml:6:5: error: on_failure starts "dead_letter" without its required input "failed_id" \[invalid-inputs\]/);
    writeFileSync(join(dir, 'definitions', 'pay.yaml'), PAY);
    expect((await runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } })).code).toBe(0);
  });

  it('braid validate checks a grouped hook: group_by without a window, both spellings, an unknown field, a window that is no duration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-dead-letters-'));
    mkdirSync(join(dir, 'definitions'));
    writeFileSync(join(dir, 'definitions', 'page.yaml'), PAGE);
    const write = (text: string) => writeFileSync(join(dir, 'definitions', 'pay.yaml'), text);
    const validate = () => runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } });
    write(GROUPED);
    expect((await validate()).code).toBe(0);
    write(GROUPED.replace('  window: 10m\n', ''));
    expect((await validate()).stdout).toMatch(
      /pay\.yaml:6:3: error: on_failure: group_by groups the failures of a window: add window \(e\.g\. window: 10m\) \[schema\]/,
    );
    write(GROUPED.replace('failed.task }}"\n', 'failed.count }}"\n'));
    expect((await validate()).stdout).toMatch(/pay\.yaml:6:\d+: error: unknown field "count" \(fields: id, name, error, task, attempt\) \[cel-unknown-ref\]/);
    write(GROUPED.replace('window: 10m', 'window: soon'));
    expect((await validate()).stdout).toMatch(/pay\.yaml:7:\d+: error: on_failure\.window/);
    write(GROUPED.replace('window: 10m', 'window: 10m\n  start: { workflow: page }'));
    expect((await validate()).stdout).toMatch(
      /error: on_failure: write the workflow to start either as on_failure\.workflow or under on_failure\.start, not both \[schema\]/,
    );
    write(GROUPED.replace('  workflow: page\n', '  workflow: pages\n'));
    expect((await validate()).stdout).toMatch(
      /pay\.yaml:4:13: error: on_failure starts unknown workflow "pages" \[unknown-workflow\][\s\S]*hint: did you mean "page"\?/,
    );
  });
});
