import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/api/client.js';
import { startApiServer } from '../../src/api/server.js';
import { NonRetryableError } from '../../src/index.js';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { runCliInProcess } from '../helpers/cli.js';
import { backend, drivenRuntime, final, postgresUrl } from '../helpers/runtime.js';

/** One task of `kind` with 5 attempts, its retry policy as given (YAML, or none). */
const one = (name: string, retry = '', returns = '') =>
  `name: ${name}\ntasks:\n  t:\n    kind: k\n    max_attempts: 5\n${retry ? `    retry: ${retry}\n` : ''}${returns ? `    returns: ${returns}\n` : ''}`;

/** Runs the workflow to its end on a driven runtime with handler `k`; returns its task. */
async function ended(definition: string, k: Handlers[string]) {
  const name = /^name: (\w+)/.exec(definition)![1];
  const rt = await drivenRuntime({ definitions: { [name]: definition }, handlers: { k } });
  await rt.startWorker();
  const id = await rt.start(name);
  const w = await final(rt, id);
  return { w, t: await rt.workflow(id).task('t') };
}

describe(`failures that stop (${backend})`, () => {
  it('a thrown NonRetryableError ends the task after one attempt, its error saying why, its code kept', async () => {
    const { w, t } = await ended(one('declined'), async () => {
      throw new NonRetryableError('card declined', { code: 'card_declined' });
    });
    expect(w.state).toBe('failed');
    expect(t).toMatchObject({ state: 'discarded', attempt: 1 });
    expect(t.errors).toEqual([
      expect.objectContaining({
        attempt: 1,
        name: 'NonRetryableError',
        code: 'card_declined',
        message: 'card declined',
        not_retried: 'the handler said no retry can mend it',
      }),
    ]);
    expect(t.errors[0]).not.toHaveProperty('no_retry');
  });

  it('ctx.fail with retry: false stops at once; without it the failure is retried, its code kept', async () => {
    const stopped = await ended(one('failed_once'), async (_args, ctx) => ctx.fail('partner said 404', { retry: false, code: 'not_found' }));
    expect(stopped.t).toMatchObject({ state: 'discarded', attempt: 1 });
    expect(stopped.t.errors[0]).toMatchObject({ code: 'not_found', not_retried: 'the handler said no retry can mend it' });
    const retried = await ended(one('failed_again'), async (_args, ctx) => {
      if (ctx.attempt < 3) ctx.fail('upstream busy', { code: 'busy' });
      return { ok: true };
    });
    expect(retried.t).toMatchObject({ state: 'completed', attempt: 3 });
    expect(retried.t.errors.map((e) => [e.attempt, e.code, e.not_retried])).toEqual([
      [1, 'busy', undefined],
      [2, 'busy', undefined],
    ]);
  });

  it("retry.non_retryable stops on the codes it names (an error's own code), and only on those", async () => {
    const declined = async () => {
      throw Object.assign(new Error('card declined'), { code: 'card_declined' });
    };
    const listed = await ended(one('listed', '{ non_retryable: [card_declined], initial: 1s }'), declined);
    expect(listed.t).toMatchObject({ state: 'discarded', attempt: 1 });
    expect(listed.t.errors[0]).toMatchObject({ code: 'card_declined', not_retried: "card_declined is in the task's retry.non_retryable" });
    const other = await ended(one('other', '{ non_retryable: [insufficient_funds], initial: 1s }'), declined);
    expect(other.t).toMatchObject({ state: 'discarded', attempt: 5 });
    expect(other.t.errors.every((e) => e.not_retried === undefined)).toBe(true);
  });

  it('output_invalid stops after one attempt by default; retry: { non_retryable: [] } retries it', async () => {
    const returns = '{ type: object, required: [risk], properties: { risk: { type: number } } }';
    const bad = async () => ({ risk: 'high' });
    const byDefault = await ended(one('typed', '', returns), bad);
    expect(byDefault.t).toMatchObject({ state: 'discarded', attempt: 1 });
    expect(byDefault.t.errors[0]).toMatchObject({
      code: 'output_invalid',
      not_retried: 'output_invalid is not retried by default (retry: { non_retryable: [] } retries it)',
    });
    const optedIn = await ended(one('typed_retried', '{ non_retryable: [], initial: 1s }', returns), bad);
    expect(optedIn.t).toMatchObject({ state: 'discarded', attempt: 5 });
    expect(optedIn.t.errors.map((e) => e.code)).toEqual(Array(5).fill('output_invalid'));
  });
});

describe(`failures that stop, as the API and braid status say them (${backend})`, () => {
  it("the task's error in the API carries its code and why it was not retried; braid status shows both", async () => {
    const rt = await drivenRuntime({
      definitions: { declined: one('declined') },
      handlers: {
        k: async () => {
          throw new NonRetryableError('card declined', { code: 'card_declined' });
        },
      },
    });
    await rt.startWorker();
    const id = await rt.start('declined');
    expect((await final(rt, id)).state).toBe('failed');
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-1' });
    try {
      const status = await new ApiClient(server.url, 'tok-tok-tok-tok-1').status(id);
      expect(status.tasks[0]).toMatchObject({ state: 'discarded', attempt: 1 });
      expect(status.tasks[0].errors[0]).toMatchObject({ code: 'card_declined', not_retried: 'the handler said no retry can mend it' });
    } finally {
      await server.close();
    }
    if (backend === 'postgres') {
      const shown = await runCliInProcess(['status', id, '--database', postgresUrl, '--schema', rt.schema]);
      expect(shown.stdout).toMatch(/^t +k +discarded +1\/5 +card_declined: card declined \(not retried: the handler said no retry can mend it\)$/m);
    }
  });
});

describe.runIf(backend === 'pglite')('failures that stop in braid test', () => {
  it('a mock can throw a non-retryable error: the task ends after one attempt; retry: false without an error is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-non-retryable-'));
    mkdirSync(join(dir, 'definitions'));
    writeFileSync(join(dir, 'definitions', 'pay.yaml'), 'name: pay\ntasks:\n  charge: { kind: charge }\n  ship: { kind: ship, deps: [charge] }\n');
    writeFileSync(
      join(dir, 'definitions', 'pay.test.yaml'),
      [
        'workflow: pay',
        'tests:',
        '  - name: a declined card is not retried',
        '    mocks:',
        '      charge: { error: card declined, code: card_declined, retry: false }',
        '      ship: { output: {} }',
        '    expect:',
        '      state: failed',
        '      tasks:',
        '        charge: { state: discarded, attempts: 1 }',
        '        ship: cancelled',
        '',
      ].join('\n'),
    );
    const tested = await runCliInProcess(['test'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(tested.stdout).toContain('1 passed, 0 failed');
    expect(tested.code).toBe(0);
    // a mock's retry: false needs its error
    writeFileSync(join(dir, 'definitions', 'pay.test.yaml'), 'workflow: pay\ntests:\n  - name: x\n    mocks:\n      charge: { output: {}, retry: false }\n');
    const refused = await runCliInProcess(['validate'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toMatch(/pay\.test\.yaml:5:\d+: error/);
  });
});
