import { afterAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import { runCli } from '../helpers/cli.js';
import { project } from '../helpers/project.js';
import { backend, newDatabase, postgresUrl, testRuntime } from '../helpers/runtime.js';

const GATE = 'name: gate\ntasks:\n  t:\n    kind: work\n    wait: { terms: { go: { signal: go } } }\n';
const holders: { release: () => void; done: Promise<unknown> }[] = [];
afterAll(async () => {
  for (const h of holders) h.release();
  await Promise.all(holders.map((h) => h.done.catch(() => undefined)));
});

// PGlite is one session: no other transaction can hold a lock on it
describe.runIf(backend === 'postgres')('a workflow another transaction holds: writes wait a bounded time, then fail as busy', () => {
  it('emit, cancel and retry through the library, the API and the CLI fail with workflow_busy ' +
    'after the lock timeout; other workflows move meanwhile', async () => {
    const rt = await testRuntime({ definitions: { gate: GATE }, lockTimeoutMs: 300 });
    const held = await rt.start('gate');
    const free = await rt.start('gate');
    // an external transaction takes the workflow's row lock and keeps it
    const db = newDatabase();
    let release: () => void = () => undefined;
    const locked = new Promise<void>((resolve) => {
      const done = db.transaction(async (tx) => {
        await tx.query(`SELECT 1 FROM "${rt.schema}".workflows WHERE id = $1 FOR UPDATE`, [held]);
        resolve();
        await new Promise<void>((r) => (release = r));
      });
      holders.push({ release: () => release(), done });
    });
    await locked;
    const started = Date.now();
    await expect(rt.workflow(held).signals.emit('go', {})).rejects.toMatchObject({
      code: 'workflow_busy',
      message: expect.stringContaining(`workflow ${held} is busy (workflow_busy)`),
    });
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    await expect(rt.workflow(held).cancel()).rejects.toMatchObject({ code: 'workflow_busy' });
    // everything else moves
    expect((await rt.workflow(free).signals.emit('go', {})).signal.key).toBe('go');
    // the API: 503, retryable
    const server = await startApiServer(rt, { token: 't' });
    try {
      const r = await fetch(`${server.url}/api/workflows/${held}/signals`, {
        method: 'POST',
        headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'go' }),
      });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('1');
      expect(await r.json()).toMatchObject({ code: 'workflow_busy' });
    } finally {
      await server.close();
    }
    // the CLI, with the project's lock_timeout: exit 1, one line naming the workflow
    const dir = project({ 'braid.config.yaml': `database: ${postgresUrl}\nschema: ${rt.schema}\nlimits: { lock_timeout: 400ms }\n` });
    const cli = runCli(['signal', held, 'go'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(cli).toMatchObject({
      code: 1,
      stderr: `workflow ${held} is busy (workflow_busy): another transaction held it for 0.4 s, the lock timeout; try again\n`,
    });
    release();
    await holders[0].done;
    expect((await rt.workflow(held).signals.emit('go', {})).signal.key).toBe('go');
    await db.close();
  }, 60_000);
});
