import { describe, expect, it } from 'vitest';
import { startApiServer } from '../../src/api/server.js';
import { runCliInProcess } from '../helpers/cli.js';
import { tempProject } from '../helpers/dev-process.js';
import { backend, drivenRuntime, postgresUrl, uniqueSchema } from '../helpers/runtime.js';

const nightly = `name: nightly_report
inputs: { type: object, required: [at], properties: { at: { type: string } } }
schedules:
  - name: nightly
    cron: "30 2 * * *"
    timezone: Europe/Berlin
    inputs: { at: "\${{ schedule.time }}" }
tasks:
  gather: { kind: gather }
`;

describe(`braid schedules and braid schedule (${backend})`, () => {
  const db = backend === 'postgres' ? ['--database', postgresUrl, '--schema', uniqueSchema()] : [];
  const env = backend === 'postgres' ? {} : { DATABASE_URL: '' };

  it('lists, pauses, backfills (twice: nothing new), triggers and resumes; bad input is one line and its exit code', async () => {
    const dir = tempProject({ 'nightly_report.yaml': nightly });
    const cli = (...args: string[]) => runCliInProcess([...args, ...db], { cwd: dir, env });
    expect((await cli('register')).code).toBe(0);
    const listed = await cli('schedules', '--next', '2');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /^nightly_report\/nightly {2}cron "30 2 \* \* \*" Europe\/Berlin {2}overlap skip\n {2}last {2}none yet\n {2}next {2}\S+Z {2}local \S+T02:30:00\+0[12]:00\n/,
    );
    const json = JSON.parse((await cli('schedules', 'nightly_report', '--json', '--next', '1')).stdout);
    expect(json[0]).toMatchObject({ workflow: 'nightly_report', name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Berlin', paused: false });
    expect(json[0].next_ticks).toHaveLength(1);
    expect((await cli('schedule', 'pause', 'nightly_report', 'nightly')).stdout).toContain('PAUSED');
    const range = ['--from', '2027-03-27T00:00:00Z', '--to', '2027-03-29T12:00:00Z'];
    const dry = await cli('schedule', 'backfill', 'nightly_report', 'nightly', ...range, '--dry-run');
    expect(dry.stdout).toBe(
      [
        '2027-03-27T01:30:00Z  would start  nightly_report:nightly:2027-03-27T01:30:00Z',
        // the clocks go forward over 02:30 that night: it runs when they land, at 03:00 local
        '2027-03-28T01:00:00Z  would start  nightly_report:nightly:2027-03-28T01:00:00Z',
        '2027-03-29T00:30:00Z  would start  nightly_report:nightly:2027-03-29T00:30:00Z',
        '3 tick(s) in the range; nothing started (--dry-run)',
        '',
      ].join('\n'),
    );
    expect((await cli('schedule', 'backfill', 'nightly_report', 'nightly', ...range)).stdout).toMatch(/3 tick\(s\): 3 started, 0 already there, 0 failed\n$/);
    expect((await cli('schedule', 'backfill', 'nightly_report', 'nightly', ...range)).stdout).toMatch(/3 tick\(s\): 0 started, 3 already there, 0 failed\n$/);
    expect((await cli('status', 'nightly_report:nightly:2027-03-28T01:00:00Z')).stdout).toContain(
      'started by schedule nightly for its tick 2027-03-28T01:00:00Z\n',
    );
    const triggered = JSON.parse((await cli('schedule', 'trigger', 'nightly_report', 'nightly', '--json')).stdout);
    expect(triggered).toMatchObject({ status: 'started', id: `nightly_report:nightly:${triggered.time}` });
    // the trigger's run is the schedule's last run
    expect((await cli('schedules', 'nightly_report')).stdout).toMatch(
      new RegExp(`\\n {2}last {2}\\S+ {2}triggered nightly_report:nightly:${triggered.time.replace(/[.]/g, '\\.')} \\(\\w+\\) \\(by hand\\)\\n`),
    );
    expect((await cli('schedule', 'resume', 'nightly_report', 'nightly')).stdout).not.toContain('PAUSED');
    const runs = JSON.parse((await cli('list', '--name', 'nightly_report', '--json')).stdout);
    expect(runs.workflows).toHaveLength(4);
    // what a user mistypes
    const unknown = await cli('schedule', 'pause', 'nightly_report', 'nighty');
    expect([unknown.code, unknown.stderr]).toEqual([1, 'workflow "nightly_report" has no schedule "nighty" (its schedules: nightly)\n']);
    expect((await cli('schedule', 'explode', 'nightly_report', 'nightly')).code).toBe(2);
    expect((await cli('schedule', 'backfill', 'nightly_report', 'nightly', '--from', 'yesterday', '--to', '2027-01-01T00:00:00Z')).code).toBe(2);
    expect((await cli('schedule', 'backfill', 'nightly_report', 'nightly', '--from', '2027-01-02T00:00:00Z', '--to', '2027-01-01T00:00:00Z')).code).toBe(2);
    expect((await cli('schedules', 'nope')).code).toBe(1);
  });

  it('the API serves the same: list, one, pause, resume, trigger and backfill, behind the token', async () => {
    const rt = await drivenRuntime({ definitions: { nightly_report: nightly } });
    const server = await startApiServer(rt, { token: 'tok-tok-tok-tok-2' });
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: 'Bearer tok-tok-tok-tok-2', 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    try {
      expect((await fetch(`${server.url}/api/schedules`)).status).toBe(401);
      const list = await call('GET', '/api/schedules?workflow=nightly_report&next=2');
      expect(list.status).toBe(200);
      expect(list.body.schedules[0].next_ticks).toHaveLength(2);
      expect((await call('POST', '/api/schedules/nightly_report/nightly/pause', {})).body.paused).toBe(true);
      expect((await call('GET', '/api/schedules/nightly_report/nightly')).body.paused).toBe(true);
      expect((await call('POST', '/api/schedules/nightly_report/nightly/resume', {})).body.paused).toBe(false);
      expect((await call('POST', '/api/schedules/nightly_report/nightly/trigger', {})).body.status).toBe('started');
      const filled = await call('POST', '/api/schedules/nightly_report/nightly/backfill', { from: '2027-01-01T00:00:00Z', to: '2027-01-02T23:00:00Z' });
      expect(filled.body.runs.map((r: { status: string }) => r.status)).toEqual(['started', 'started']);
      expect(await call('POST', '/api/schedules/nightly_report/nope/pause', {})).toMatchObject({ status: 404, body: { code: 'schedule_not_found' } });
      expect(await call('POST', '/api/schedules/nightly_report/nightly/backfill', { from: 'x', to: 'y' })).toMatchObject({ status: 400 });
      expect(await call('POST', '/api/schedules/nightly_report/nightly/backfill', { from: '2027-02-01T00:00:00Z', to: '2027-01-01T00:00:00Z' })).toMatchObject({
        status: 400,
        body: { code: 'backfill_range' },
      });
    } finally {
      await server.close();
    }
  });
});
