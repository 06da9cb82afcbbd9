import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';
import { backend } from '../helpers/runtime.js';

const fixture = join(repoRoot, 'test/fixtures/testing');
const golden = join(repoRoot, 'test/testing/golden');
const run = (args: string[], cwd = fixture) => runCliInProcess(['test', '--handlers', 'handlers.mjs', ...args], { cwd, env: { DATABASE_URL: '' } });
/** Real times vary between runs; virtual times do not. */
const steady = (text: string) =>
  text
    .replace(/\(\d+ ms\)/g, '(X ms)')
    .replace(/\d+\.\d s\)/g, 'X s)')
    .replace(/time="\d+\.\d+"/g, 'time="X"');

// braid test runs on an embedded database of its own whatever the backend, so one of the two passes runs it
describe.runIf(backend === 'pglite')('braid test, through the CLI', { timeout: 180_000 }, () => {
  it(
    'passing tests: every mock form, signals at virtual times, timers, backoff, the workflow timeout, ' + 'a child group with a quorum, a wait by id; exit 0',
    async () => {
      const r = await run(['definitions']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^9 passed, 0 failed \(9 test\(s\) in 3 file\(s\), [\d.]+ s\)$/m);
      for (const name of [
        'verified on day one gets the trial',
        'nobody verifies, three days pass',
        'the backoff runs in virtual time',
        'discarded after three attempts',
        'a slow handler takes its time',
        'handler real runs',
        'two of three are enough',
        'the quorum fails',
        'a workflow that ended elsewhere',
      ]) {
        expect(r.stdout).toMatch(new RegExp(`^PASS  definitions/\\S+ › .*${name}`, 'm'));
      }
    },
  );

  it('failing tests: a diff per failed expectation with its step and virtual time, exit 1; text, junit and github (golden)', async () => {
    const text = await run(['failing']);
    expect(text.code).toBe(1);
    await expect(steady(text.stdout)).toMatchFileSnapshot(join(golden, 'failing.txt'));
    const junit = await run(['failing', '--format', 'junit']);
    expect(junit.code).toBe(1);
    expect(junit.stdout).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="braid test" tests="3" failures="2"/);
    await expect(steady(junit.stdout)).toMatchFileSnapshot(join(golden, 'failing.junit.xml'));
    const github = await run(['failing', '--format', 'github']);
    expect(github.code).toBe(1);
    expect(github.stdout).toMatch(/^::error file=failing\/signup.test.yaml,line=14,title=braid test%3A expects the trial/m);
    await expect(github.stdout).toMatchFileSnapshot(join(golden, 'failing.github.txt'));
  });

  it('json output, and --filter', async () => {
    const r = await run(['failing', '--format', 'json', '--filter', 'too much']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ passed: 0, failed: 1, files: 1 });
    expect(report.tests).toHaveLength(1);
    expect(report.tests[0]).toMatchObject({
      file: 'failing/signup.test.yaml',
      name: 'expects too much in the middle of the run',
      passed: false,
      failures: [
        { step: 1, line: 22, time: '2026-01-01T01:00:00.000Z', mismatches: [{ path: 'tasks.verify.state', expected: 'completed', actual: 'pending' }] },
      ],
    });
  });

  it('--update rewrites the final expect from the run, keeping comments; then it passes (a step expectation still fails)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-update-'));
    cpSync(fixture, dir, { recursive: true });
    const updated = await run(['failing', '--update'], dir);
    expect(updated.stderr).toContain('braid: updated failing/signup.test.yaml');
    expect(updated.code).toBe(1);
    const text = readFileSync(join(dir, 'failing/signup.test.yaml'), 'utf8');
    expect(text).toContain('# the final expect is wrong: --update rewrites it');
    expect(text).toContain('reason: timeout');
    expect(text).toContain('trial: skipped');
    const again = await run(['failing', '--format', 'json'], dir);
    const report = JSON.parse(again.stdout);
    expect(report.tests.map((t: { passed: boolean }) => t.passed)).toEqual([true, true, false]);
  });

  it('--coverage: per workflow, the tasks never run and the wait terms never true', async () => {
    const r = await run(['definitions', '--coverage', '--filter', 'verified on day one']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('coverage:\n  signup (1 test(s))\n    tasks run: 5 of 6; never run: reminder\n    skipped in some test: reminder\n');
    expect(r.stdout).toContain('    wait verify: verified true in some test, three_days never true\n');
    expect(r.stdout).toContain('    wait approve: approved true in some test\n');
  });

  it('a diagnostic for each test-file rule (also from braid validate), and no test runs', async () => {
    const r = await run(['bad', '--format', 'json']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('bad/schema.test.yaml:6:9: error: tests.0.steps.0: unknown key "wait" [test-schema]');
    expect(r.stderr).toContain('bad/unknown_task.test.yaml:6:7: error: signup has no task "welcom" [test-unknown-task]');
    expect(r.stderr).toContain('bad/unknown_signal.test.yaml:6:24: error: no task of signup waits on signal "email_verifed" [test-unknown-signal]');
    expect(r.stderr).toContain('bad/mock_kind.test.yaml:6:7: error: no task of signup runs kind "send_mail" [test-mock-kind]');
    expect(r.stderr).toContain(
      `bad/mock_output.test.yaml:6:16: error: the mock's output breaks the returns schema of task "check": /audited must be boolean (type) [test-mock-output]`,
    );
    expect(r.stderr).toContain('bad/duration_too_long.test.yaml:5:24: error: duration "100000000d" is longer than 100 years [test-schema]');
    expect(r.stderr).toContain('bad/advance_not_duration.test.yaml:6:18: error: tests.0.steps.0.advance: invalid duration "2 days" [test-schema]');
    expect(r.stderr.match(/\[test-schema\]/g)).toHaveLength(3);
    const validate = await runCliInProcess(['validate', '--format', 'json', 'bad'], { cwd: fixture });
    expect(validate.code).toBe(1);
    expect(
      JSON.parse(validate.stdout)
        .diagnostics.map((d: { rule: string }) => d.rule)
        .sort(),
    ).toEqual(['test-mock-kind', 'test-mock-output', 'test-schema', 'test-schema', 'test-schema', 'test-unknown-signal', 'test-unknown-task']);
  });

  it("schedules: a test runs the workflow's schedules on the virtual clock across both 2027 DST changes in Berlin and New York, each policy", async () => {
    const dir = join(repoRoot, 'test/fixtures/testing/schedules');
    const r = await runCliInProcess(['test', 'definitions', '--format', 'json'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { passed: number; failed: number };
    expect([report.passed, report.failed]).toEqual([8, 0]);
    // a run that is not where the test says is a failure naming the run
    const wrong = join(dir, 'definitions', 'wrong_night.test.yaml');
    writeFileSync(wrong, readFileSync(join(dir, 'definitions', 'berlin_spring.test.yaml'), 'utf8').replace('2027-03-28T01:00:00Z', '2027-03-28T01:30:00Z'));
    try {
      const failed = await runCliInProcess(['test', 'definitions/wrong_night.test.yaml'], { cwd: dir, env: { DATABASE_URL: '' } });
      expect(failed.code).toBe(1);
      expect(failed.stdout).toContain('runs[1]: expected "berlin 2027-03-28T01:30:00Z completed", got "berlin 2027-03-28T01:00:00Z completed"');
    } finally {
      rmSync(wrong);
    }
    const bad = await runCliInProcess(['test', 'bad'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('bad/schedules.test.yaml:5:17: error: nightly has no schedule "berln" [test-schema]');
    expect(bad.stderr).toContain('hint: did you mean "berlin"?');
    expect(bad.stderr).toContain("bad/schedules.test.yaml:8:9: error: a signal step needs the test's own run");
    expect(bad.stderr).toContain("bad/schedules.test.yaml:10:7: error: expect.state is about the test's own run");
    expect(bad.stderr).toContain('bad/schedules.test.yaml:12:23: error: nightly has no schedule "new_yrok" [test-schema]');
  });

  it('events and callback links: a test emits events and expects the runs they start; a callback step answers a link', async () => {
    const dir = join(repoRoot, 'test/fixtures/testing/events');
    const r = await runCliInProcess(['test', 'definitions', '--format', 'json'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { passed: number }).passed).toBe(2);
    const wrong = join(dir, 'definitions', 'wrong_order.test.yaml');
    writeFileSync(wrong, readFileSync(join(dir, 'definitions', 'fulfil.test.yaml'), 'utf8').replace('id: fulfil-o1, state', 'id: fulfil-o2, state'));
    try {
      const failed = await runCliInProcess(['test', 'definitions/wrong_order.test.yaml'], { cwd: dir, env: { DATABASE_URL: '' } });
      expect(failed.code).toBe(1);
      expect(failed.stdout).toContain('triggered[0]: expected "fulfil fulfil-o2 running", got "fulfil fulfil-o1 running"');
    } finally {
      rmSync(wrong);
    }
  });

  it('flow control on the virtual clock: the order tasks started is a golden (fairness between tenants, two at once per tenant, three slots)', async () => {
    const dir = join(repoRoot, 'test/fixtures/testing/flow');
    const r = await runCliInProcess(['test', 'definitions'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const file = join(dir, 'definitions', 'tenant_exports.test.yaml');
    const golden = readFileSync(file, 'utf8');
    // a schedule the policy does not make fails, showing where the order parts
    const wrong = join(dir, 'definitions', 'wrong_order.test.yaml');
    writeFileSync(wrong, golden.replace('        - export[big1]\n        - export[small1]', '        - export[big1]\n        - export[big2]'));
    try {
      const failed = await runCliInProcess(['test', 'definitions/wrong_order.test.yaml'], { cwd: dir, env: { DATABASE_URL: '' } });
      expect(failed.code).toBe(1);
      expect(failed.stdout).toContain('started[1]');
    } finally {
      rmSync(wrong);
    }
    // --update writes the order from the run
    const stripped = golden.replace(/ {6}# the order[\s\S]*?(?= {6}time:)/, '');
    expect(stripped).not.toContain('started:');
    writeFileSync(wrong, stripped);
    try {
      expect((await runCliInProcess(['test', 'definitions/wrong_order.test.yaml', '--update'], { cwd: dir, env: { DATABASE_URL: '' } })).code).toBe(0);
      expect(readFileSync(wrong, 'utf8')).toContain('      started:\n        - export[big1]\n        - export[small1]\n        - export[tiny1]\n');
    } finally {
      rmSync(wrong);
    }
  });

  it('a task with no mock and no handler fails its test at once, naming it', async () => {
    const r = await runCliInProcess(['test', 'definitions', '--filter', 'day one'], { cwd: fixture, env: { DATABASE_URL: '' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('no mock and no handler for verify (kind "record"), trial (kind "activate"), finish (kind "record"), approve (kind "record")');
  });

  it('usage errors exit 2', async () => {
    expect((await run(['definitions', '--format', 'xml'])).code).toBe(2);
    expect((await run(['no-such-folder'])).code).toBe(2);
    const empty = mkdtempSync(join(tmpdir(), 'braid-empty-'));
    const none = await runCliInProcess(['test'], { cwd: empty });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no test files');
  });
});

describe.runIf(backend === 'pglite')("the examples' own workflow tests (definitions/*.test.yaml)", { timeout: 180_000 }, () => {
  it('pass on the example handlers, covering every branch of the examples', async () => {
    const r = await runCliInProcess(['test', '--handlers', 'examples/handlers.ts', '--coverage'], { env: { DATABASE_URL: '' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+ passed, 0 failed /m);
    // every task of every example ran in some test, and every wait term was true in one
    expect(r.stdout).not.toContain('never run');
    expect(r.stdout).not.toContain('never true');
  }, 180_000);
});
