import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/runtime/worker/handlers.js';
import { closeTestSessions, testWorkflow, WorkflowExpectationError } from '../../src/testing/index.js';
import { repoRoot } from '../helpers/cli.js';
import { backend } from '../helpers/runtime.js';

const definitions = join(repoRoot, 'test/fixtures/testing/definitions');

// real handler functions, as a team's vitest suite would pass them
const handlers: Handlers = {
  send_email: async () => ({ id: 'sent' }),
  record: async (_args, ctx) => {
    if (ctx.taskName !== 'verify') return { ok: true };
    const { signals } = await ctx.signals.list({ key: 'email_verified' });
    return { verified: signals.length > 0, via: 'link' };
  },
  activate: async (args: { user_id: string }) => ({ activated: args.user_id }),
};

afterAll(closeTestSessions);

describe.runIf(backend === 'pglite')(
  'braid/testing: testWorkflow from TypeScript (its own embedded database, whatever the backend)',
  { timeout: 120_000 },
  () => {
    it('signals, advance and expectations on the real engine with a virtual clock', async () => {
      const t = await testWorkflow({ definitions, workflow: 'signup', inputs: { user_id: 'u1' }, handlers });
      expect((await t.task('verify')).wait?.phase).toBe('waiting');
      await t.advance('1d');
      expect(t.now().toISOString()).toBe('2026-01-02T00:00:00.000Z');
      await t.signal('email_verified', { user_id: 'u1' });
      await t.expect({ tasks: { trial: { state: 'completed', output: { activated: 'u1' } }, reminder: 'skipped' } });
      await t.signal('approved');
      const w = await t.runToEnd();
      expect(w).toMatchObject({ state: 'completed', output: { trial: true } });
      await expect(t.expect({ state: 'failed' })).rejects.toThrow(WorkflowExpectationError);
      await t.close();
    });

    it('time skipping to the end: the three-day timer and the workflow timeout, in milliseconds of real time', async () => {
      const t = await testWorkflow({
        definitions,
        workflow: 'signup',
        inputs: { user_id: 'u2' },
        handlers,
        mocks: { welcome: { fail: 1, output: { id: 'retried' } } },
      });
      const w = await t.runToEnd();
      expect(w).toMatchObject({ state: 'failed', end_reason: 'timeout' });
      expect(t.now().toISOString()).toBe('2026-01-11T00:00:00.000Z');
      const tasks = await t.tasks();
      expect(tasks.welcome).toMatchObject({ state: 'completed', attempt: 2, output: { id: 'retried' } });
      expect(tasks.reminder.state).toBe('completed');
      expect(tasks.trial.state).toBe('skipped');
      await t.close();
    });

    it('bad arguments are clear errors', async () => {
      await expect(testWorkflow({ definitions, workflow: 'signup', inputs: {}, handlers })).rejects.toThrow(/user_id/);
      const t = await testWorkflow({ definitions, workflow: 'signup', inputs: { user_id: 'u3' }, handlers });
      await expect(t.advance('soon')).rejects.toThrow(/not a duration/);
      await t.close();
    });
  },
);
