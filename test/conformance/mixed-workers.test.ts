import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { braidBin, repoRoot } from '../helpers/cli.js';
import { heavyFile } from '../helpers/heavy.js';
import { exited } from '../helpers/processes.js';
import { backend, postgresUrl, testRuntime, until } from '../helpers/runtime.js';

heavyFile();

// one workflow of 2,000 tasks: a root, two fan-outs of 999, a join
const DEFINITION = `name: mixed
inputs: { type: object, properties: { n: { type: array } }, required: [n] }
tasks:
  root: { kind: work }
  left: { kind: work, deps: [root], for_each: "\${{ inputs.n }}" }
  right: { kind: work, deps: [root], for_each: "\${{ inputs.n }}" }
  join: { kind: work, deps: [left, right] }
`;

type Lang = 'ts' | 'py';

describe.runIf(backend === 'postgres')('TypeScript and Python workers together', () => {
  it('2 TypeScript and 2 Python workers share a workflow of 2,000 tasks under a SIGKILL every few seconds: 0 lost, 0 doubled, 0 overlapping', async () => {
    const rt = await testRuntime({ definitions: { mixed: DEFINITION }, leader: true, workerDeadAfterMs: 2000, heartbeatIntervalMs: 200, pollIntervalMs: 100 });
    await rt.startWorker();
    const table = `"${rt.schema}".mixed_runs`;
    await rt.db.query(
      `CREATE TABLE ${table} (id bigserial PRIMARY KEY, workflow_id text, task text, attempt int, pid int, lang text, started_at timestamptz, ended_at timestamptz)`,
    );
    const env = { ...process.env, DATABASE_URL: '', NO_COLOR: '1', BRAID_DIRECT_URL: postgresUrl, BRAID_TABLE: table };
    const start = (lang: Lang): ChildProcess =>
      lang === 'ts'
        ? spawn(
            process.execPath,
            [braidBin, 'worker', '--handlers', join(repoRoot, 'test/fixtures/mixed/handlers.mjs'), '--database', postgresUrl, '--schema', rt.schema].concat([
              '--queues',
              'default=8',
              '--heartbeat',
              '200ms',
              '--dead-after',
              '2s',
            ]),
            { cwd: repoRoot, env, stdio: 'ignore' },
          )
        : spawn(
            '/usr/bin/python3',
            ['-m', 'braid_worker', '--handlers', 'mixed_handlers', '--dsn', postgresUrl, '--schema', rt.schema, '--concurrency', '8'].concat([
              '--heartbeat-interval',
              '0.2',
              '--dead-after',
              '2',
              '--poll-interval',
              '0.2',
            ]),
            { cwd: repoRoot, env: { ...env, PYTHONPATH: 'clients/python:test/fixtures/mixed' }, stdio: 'ignore' },
          );
    const langs: Lang[] = ['ts', 'ts', 'py', 'py'];
    const workers = langs.map(start);
    const id = await rt.start('mixed', { n: Array.from({ length: 999 }, (_, i) => i) });
    let kills = 0;
    const killed = new Set<Lang>();
    const done = async () =>
      (await rt.db.query<{ state: string }>(`SELECT state FROM "${rt.schema}".workflows WHERE id = $1`, [id])).rows[0].state !== 'running';
    try {
      while (!(await done())) {
        // a SIGKILL every 2 to 4 seconds, of a random worker, restarted at once in its language
        const next = Date.now() + 2000 + Math.random() * 2000;
        await until(async () => Date.now() >= next || (await done()), 10_000, 100);
        if (await done()) break;
        const i = Math.floor(Math.random() * workers.length);
        workers[i].kill('SIGKILL');
        await exited(workers[i]);
        killed.add(langs[i]);
        kills++;
        workers[i] = start(langs[i]);
      }
    } finally {
      for (const w of workers) w.kill('SIGKILL');
      await Promise.all(workers.map(exited));
    }
    const w = await rt.workflow(id).waitUntilFinal({ timeoutMs: 10_000 });
    expect(w.state).toBe('completed');
    expect(kills).toBeGreaterThan(0);
    const { rows: tasks } = await rt.db.query<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM "${rt.schema}".tasks GROUP BY state`);
    // 0 lost: every task completed
    expect(tasks).toEqual([{ state: 'completed', n: 2000 }]);
    // 0 doubled: no attempt ran twice, and each task finished exactly one attempt's handler that is the completed one
    const { rows: doubled } = await rt.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT task, attempt FROM ${table} GROUP BY 1, 2 HAVING count(*) > 1) x`,
    );
    expect(doubled[0].n).toBe(0);
    const { rows: finished } = await rt.db.query<{ task: string; runs: number }>(
      `SELECT t.name AS task, count(r.id)::int AS runs FROM "${rt.schema}".tasks t
         LEFT JOIN ${table} r ON r.task = t.name AND r.attempt = t.attempt AND r.ended_at IS NOT NULL
        GROUP BY t.name HAVING count(r.id) <> 1`,
    );
    expect(finished).toEqual([]);
    // 0 overlapping: an attempt that ended did so before the task's next attempt began
    const { rows: overlaps } = await rt.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT ended_at, lead(started_at) OVER (PARTITION BY task ORDER BY attempt) AS next_start FROM ${table}) x
        WHERE ended_at IS NOT NULL AND next_start IS NOT NULL AND next_start < ended_at`,
    );
    expect(overlaps[0].n).toBe(0);
    // both languages ran tasks and both were killed at least once over the run (most runs)
    const { rows: ran } = await rt.db.query<{ lang: string }>(`SELECT DISTINCT lang FROM ${table} ORDER BY lang`);
    expect(ran.map((r) => r.lang)).toEqual(['py', 'ts']);
    console.log(`mixed workers: ${kills} SIGKILLs (${[...killed].join(', ')})`);
  }, 600_000);
});
