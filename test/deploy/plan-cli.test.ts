import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli.js';
import { databaseConfig, project, write } from '../helpers/project.js';
import { backend } from '../helpers/runtime.js';

const V1 = `name: flow
description: v1
inputs:
  type: object
  required: [id]
  properties:
    id: { type: string }
    amount: { type: number }
timeout: 7d
tasks:
  check:
    kind: check
    args: { id: "\${{ inputs.id }}" }
  review:
    kind: review
    deps: [check]
    when: 'deps["check"].output.ok == true'
    wait:
      expr: approved || sla
      terms:
        approved: { signal: refund_review, where: payload.ok == true }
        sla: { timer: { after_wait_started: 1h } }
  settle:
    kind: settle_refund
    deps: [review]
    args: { id: "\${{ inputs.id }}" }
  audit: { kind: audit, deps: [check], queue: slow }
  legacy: { kind: legacy, deps: [check] }
output: { done: true }
`;

// every class of change at once: inputs narrowed, timeout, output, args shapes, a rename, a kind, deps, the
// wait's expr, key, where, count and timer, the condition, a task timeout and queue, a task added and one removed
const V2 = `name: flow
description: v2
inputs:
  type: object
  required: [id, currency]
  properties:
    id: { type: string }
    amount: { type: integer }
    currency: { type: string }
timeout: 14d
tasks:
  check:
    kind: check
    args: { id: "\${{ inputs.id }}", strict: true }
  approve:
    kind: review
    renamed_from: review
    deps: [check]
    when: 'deps["check"].output.ok'
    wait:
      expr: approved && sla
      terms:
        approved: { signal: review_done, where: payload.ok, count: 2 }
        sla: { timer: { after_wait_started: 2h } }
  settle:
    kind: settle_payment
    deps: [approve, audit]
    args: { id: "\${{ inputs.id }}", amount: 1 }
    timeout: 5m
  audit: { kind: audit, deps: [check], queue: fast }
  notify: { kind: notify, deps: [settle] }
output: { done: false }
`;

const HANDLERS = 'export default Object.fromEntries(["check", "review", "settle_payment", "audit", "notify"].map((k) => [k, async () => ({})]));\n';
const golden = (name: string) => join(__dirname, 'golden', name);

describe(`braid plan: what a deploy changes, compared with what runs (${backend})`, () => {
  it('against the database: every class of change, per version, with the findings (text and json golden), exit 1 on an error finding', async () => {
    const db = databaseConfig();
    const dir = project({
      'braid.config.yaml': `definitions: definitions\nhandlers: handlers.mjs\n${db.config}`,
      'definitions/flow.yaml': V1,
      'handlers.mjs': HANDLERS,
    });
    const env = db.env;
    expect((await runCliInProcess(['register', '--force'], { cwd: dir, env })).code).toBe(0);
    expect((await runCliInProcess(['start', 'flow', '--inputs', '{"id":"r1"}', '--id', 'r1'], { cwd: dir, env })).code).toBe(0);
    expect(await runCliInProcess(['plan'], { cwd: dir, env })).toMatchObject({ code: 1 });
    write(dir, 'definitions/flow.yaml', V2);
    const text = await runCliInProcess(['plan'], { cwd: dir, env });
    expect(text.code).toBe(1);
    await expect(text.stdout).toMatchFileSnapshot(golden('plan.txt'));
    expect(text.stderr).toBe('');
    const json = await runCliInProcess(['plan', '--format', 'json'], { cwd: dir, env });
    expect(json.code).toBe(1);
    await expect(json.stdout).toMatchFileSnapshot(golden('plan.json'));
    const report = JSON.parse(json.stdout);
    expect(new Set(report.workflows[0].versions[0].changes.map((c: { change: string }) => c.change)).size).toBeGreaterThanOrEqual(12);
    expect([...new Set(report.diagnostics.map((d: { rule: string }) => d.rule))].sort()).toEqual([
      'deploy-args-shape',
      'deploy-inputs',
      'deploy-missing-handler',
      'deploy-signal-key',
    ]);
    // the versions and their diff, as the database has them
    expect((await runCliInProcess(['register', '--force'], { cwd: dir, env })).stdout).toMatch(
      /^flow new [0-9a-f]{12}\n {2}[0-9a-f]{12}: 1 running, keep handlers for legacy, settle_refund\n$/,
    );
    const versions = JSON.parse((await runCliInProcess(['versions', 'flow', '--json'], { cwd: dir, env })).stdout);
    expect(versions.map((v: { state: string; running: number }) => [v.state, v.running])).toEqual([
      ['current', 0],
      ['draining', 1],
    ]);
    const diff = await runCliInProcess(['versions', 'flow', '--diff', versions[1].hash.slice(0, 12), versions[0].hash.slice(0, 8)], { cwd: dir, env });
    expect(diff.code).toBe(0);
    expect(diff.stdout.split('\n').slice(1).join('\n')).toBe(
      `${text.stdout
        .split('\n')
        .filter((l) => /^ {4}(task|workflow)/.test(l))
        .map((l) => l.slice(2))
        .join('\n')}\n`,
    );
    expect(await runCliInProcess(['versions', 'flow', '--diff', 'zz', versions[0].hash], { cwd: dir, env })).toMatchObject({
      code: 1,
      stderr: 'flow has no registered version zz (braid versions flow lists them)\n',
    });
    // the same definitions again: nothing new, the older version still drains
    expect((await runCliInProcess(['plan'], { cwd: dir, env })).stdout).toMatch(
      /^flow: unchanged [0-9a-f]{12}\n {2}[0-9a-f]{12} \(draining, 1 running\): 19 changes to the current version\n/,
    );
    // the kinds only the draining version uses stay typed, marked, so their handlers keep type-checking
    const types = await runCliInProcess(['types', '--out', '-'], { cwd: dir, env });
    expect(types.stdout).toContain(
      `  /** Only workflows running on older versions use this kind: flow ` +
        `${versions[1].hash.slice(0, 12)} (1 running). */\n  settle_refund: {\n    id: string;\n  };\n`,
    );
    expect(types.stdout).toContain('  settle_payment: {\n');
    expect((await runCliInProcess(['types', '--out', '-', '--offline'], { cwd: dir, env })).stdout).not.toContain('settle_refund');
  }, 120_000);

  it('against a git ref (no database): a pull-request check in github and sarif formats', async () => {
    const dir = project({ 'braid.config.yaml': 'definitions: definitions\nhandlers: handlers.mjs\n', 'definitions/flow.yaml': V1, 'handlers.mjs': HANDLERS });
    const git = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: dir,
        env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
      });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-qm', 'v1');
    write(dir, 'definitions/flow.yaml', V2);
    const env = { DATABASE_URL: '' };
    // no database here: plan says how to compare
    expect(await runCliInProcess(['plan'], { cwd: dir, env })).toMatchObject({
      code: 2,
      stderr: 'braid: no database to compare with: pass --against GIT_REF (a pull-request check), or --database URL\n',
    });
    const text = await runCliInProcess(['plan', '--against', 'main'], { cwd: dir, env });
    expect(text.code).toBe(1);
    await expect(text.stdout).toMatchFileSnapshot(golden('plan-git.txt'));
    const github = await runCliInProcess(['plan', '--against', 'main', '--format', 'github'], { cwd: dir, env });
    expect(github.code).toBe(1);
    await expect(github.stdout).toMatchFileSnapshot(golden('plan.github.txt'));
    const sarif = await runCliInProcess(['plan', '--against', 'main', '--format', 'sarif'], { cwd: dir, env });
    expect(sarif.code).toBe(1);
    const log = JSON.parse(sarif.stdout);
    await expect(`${JSON.stringify(log.runs[0].results, null, 2)}\n`).toMatchFileSnapshot(golden('plan.sarif.json'));
    expect(log.runs[0].tool.driver.rules.map((r: { id: string }) => r.id)).toContain('deploy-missing-handler');
    // the committed version against itself, with a handler for each kind: nothing changes, nothing blocks
    git('stash', '-q');
    write(dir, 'handlers.mjs', HANDLERS.replace('"notify"', '"notify", "settle_refund", "legacy"'));
    expect(await runCliInProcess(['plan', '--against', 'HEAD'], { cwd: dir, env })).toMatchObject({
      code: 0,
      stdout: 'flow: unchanged b6999cc40ce1\n1 workflow: 0 new versions, 1 unchanged; 0 errors, 0 warnings\n',
    });
    expect(await runCliInProcess(['plan', '--against', 'no-such-branch'], { cwd: dir, env })).toMatchObject({
      code: 2,
      stderr: 'braid: --against no-such-branch: no such git ref\n',
    });
    expect((await runCliInProcess(['plan', '--against', '--help'], { cwd: dir, env })).code).toBe(2);
    const outside = project({ 'definitions/flow.yaml': V1 });
    expect(await runCliInProcess(['plan', '--against', 'main'], { cwd: outside, env })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/is not inside a git repository/),
    });
  }, 60_000);

  it('bad input: one line each, with its exit code, never a stack', async () => {
    const db = databaseConfig();
    const dir = project({
      'braid.config.yaml': `definitions: definitions\nhandlers: handlers.mjs\n${db.config}`,
      'definitions/flow.yaml': V1,
      'handlers.mjs': 'throw new Error("no network here");\n',
    });
    const cli = (...args: string[]) => runCliInProcess(args, { cwd: dir, env: db.env });
    const oneLine = (r: { stderr: string; stdout: string }) => {
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr + r.stdout).not.toMatch(/\n\s+at /);
    };
    for (const [args, code] of [
      [['plan', '--format', 'xml'], 2],
      [['plan', 'no/such/file.yaml'], 2],
      [['upgrade'], 2],
      [['upgrade', 'a', 'b'], 2],
      [['upgrade', 'flow', '--format', 'xml'], 2],
      [['versions', 'flow', '--diff', 'abc'], 2],
      [['retry', 'x', '--on-current', '--mode', 'sideways'], 2],
    ] as const) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(code);
      oneLine(r);
    }
    // a handlers module that cannot load: plan and register say so; register --force goes on without the check
    const refused =
      'braid: cannot load the handlers module handlers.mjs: no network here (pass --handlers MODULE, or --force to go on without checking handlers)\n';
    expect(await cli('register')).toMatchObject({ code: 1, stdout: '', stderr: refused });
    const forced = await cli('register', '--force');
    expect(forced.code).toBe(0);
    expect(forced.stderr).toBe('braid: cannot load the handlers module handlers.mjs: no network here: missing handlers are not checked (--force)\n');
    expect(await cli('plan')).toMatchObject({ code: 1, stderr: refused });
    // unknown names, versions and workflows are the subject's failure (exit 1)
    expect(await cli('upgrade', 'nope')).toMatchObject({ code: 1, stderr: 'workflow nope is not registered; run braid register\n' });
    expect(await cli('upgrade', 'flow', '--to', 'not-a-hash')).toMatchObject({
      code: 1,
      stderr: 'flow has no registered version not-a-hash (braid versions flow lists them)\n',
    });
    const missing = await cli('upgrade', 'flow', '--id', 'nobody', '--id', 'nobody');
    expect(missing).toMatchObject({ code: 1, stdout: expect.stringContaining('  nobody  ?  cannot move: no such workflow\n') });
    expect(await cli('retry', 'nobody', '--on-current')).toMatchObject({ code: 1, stderr: 'no workflow with id "nobody"\n' });
    // 2-7 s alone; each command opens the embedded database, which a loaded CI machine made 25-60 s in all
  }, 120_000);
});
