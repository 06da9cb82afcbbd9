import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCli, runCliInProcess } from './helpers/cli.js';
import { project } from './helpers/project.js';

const NO_STACK = /\n\s+at .+:\d+:\d+/;

describe('braid CLI: help and usage', () => {
  it.each(['validate', 'compile', 'graph', 'demo', 'migrate', 'start', 'worker', 'status', 'cancel', 'signal', 'diagnose', 'retry'])(
    '%s --help prints its usage and exits 0',
    async (command) => {
      const run = await runCliInProcess([command, '--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Usage: braid ${command}`);
    },
  );

  it('braid --help lists every command; no command is a usage error', async () => {
    const help = runCli(['--help']);
    expect(help.code).toBe(0);
    for (const c of ['validate', 'compile', 'graph', 'demo', 'migrate', 'start', 'worker', 'status', 'cancel', 'signal', 'diagnose', 'retry'])
      expect(help.stdout).toContain(`braid ${c}`);
    expect(runCli([]).code).toBe(2);
    expect(runCli(['--version']).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it.each([
    [['frobnicate'], /unknown command "frobnicate"/],
    [['validate', '--bogus'], /Unknown option '--bogus'/],
    [['validate', '--format', 'xml'], /--format must be one of text, json, github, sarif/],
    [['validate', 'no/such/place'], /no such file or folder/],
    [['compile'], /compile takes one FILE or NAME/],
    [['compile', 'order_fulfilment', '--inputs', '{not json'], /--inputs is not valid JSON/],
    [['compile', 'order_fulfilment', '--inputs', '@missing.json'], /cannot read inputs file missing.json/],
    [['compile', 'order_fulfilment', '--now', 'yesterday'], /--now must be an ISO 8601 time/],
    [['compile', 'nope.yaml'], /no such file: nope.yaml/],
    [['graph', 'order_fulfilment', '--format', 'png'], /--format must be one of mermaid, dot/],
    [['validate', '--max-depth', '-1'], /--max-depth must be a positive integer|Unknown option|argument/],
  ])('%j is one line on stderr, exit 2, no stack', async (args, message) => {
    const run = await runCliInProcess(args as string[]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message as RegExp);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(NO_STACK);
  });
});

describe('braid validate', () => {
  it('validates definitions/ by default and exits 0', async () => {
    const run = await runCliInProcess(['validate']);
    expect(run.code).toBe(0);
    // the seven examples, and their test files
    expect(run.stdout).toMatch(/^14 files checked: 0 errors, 0 warnings$/m);
  });

  it('warnings alone do not fail', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-warn-'));
    writeFileSync(join(dir, 'odd_name.yaml'), 'name: other_name\ntasks:\n  a: { kind: x }\n');
    const run = await runCliInProcess(['validate', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('warning:');
    expect(run.stdout).toContain('[file-name]');
  });

  it('one YAML syntax problem is one error (the first in the file), counting the ones it may cause', async () => {
    const dir = project({
      'definitions/tabbed.yaml': 'name: tabbed\ntasks:\n\ta: { kind: x }\n  b: { kind: y }\n',
      'definitions/bracket.yaml': 'name: bracket\ntasks:\n  a: { kind: [x }\n  b: { kind: y }\n  c: { deps: [a, b }\n',
    });
    const run = await runCliInProcess(['validate', '--format', 'json'], { cwd: dir });
    const found = (JSON.parse(run.stdout) as { diagnostics: { file: string; line: number; message: string }[] }).diagnostics;
    expect(found.map((d) => [d.file, d.line])).toEqual([
      ['definitions/bracket.yaml', 3],
      ['definitions/tabbed.yaml', 3],
    ]);
    expect(found[0].message).toMatch(/\(and 3 more syntax errors after it, which this one may cause\)$/);
    expect(found[1].message).toBe('tabs are not allowed as indentation (and 1 more syntax error after it, which this one may cause)');
  });

  it("a config's definitions folder that does not exist is one error naming it, for every command that reads the definitions", async () => {
    const dir = project({ 'braid.config.yaml': 'definitions: defs\n' });
    for (const args of [['validate'], ['test'], ['types']]) {
      const run = await runCliInProcess(args, { cwd: dir });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('braid.config.yaml: definitions: the folder "defs" does not exist\n');
    }
  });
});

describe('braid compile', () => {
  const args = ['compile', 'order_fulfilment', '--inputs', '{"order_id":"o1","parcels":[{"id":"p1"}]}', '--id', '01TEST', '--now', '2026-03-01T10:00:00Z'];

  it('prints the plan; twice the same bytes', async () => {
    const a = await runCliInProcess(args);
    const b = await runCliInProcess(args);
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
    const plan = JSON.parse(a.stdout);
    expect(plan.workflow).toMatchObject({ id: '01TEST', name: 'order_fulfilment', created_at: '2026-03-01T10:00:00.000Z' });
    expect(plan.tasks.map((t: { name: string }) => t.name)).toEqual(['score_fraud', 'charge', 'decide_shipment', 'ship[p1]', 'notify']);
  });

  it('takes a file path and @inputs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-inputs-'));
    writeFileSync(join(dir, 'inputs.json'), '{"customer_id":"c1","month":"2026-01"}');
    const run = await runCliInProcess([
      'compile',
      'definitions/monthly_billing.yaml',
      '--inputs',
      `@${join(dir, 'inputs.json')}`,
      '--id',
      'x',
      '--now',
      '2026-01-01T00:00:00Z',
    ]);
    expect(run.code).toBe(0);
    const plan = JSON.parse(run.stdout);
    expect(plan.workflow.inputs).toEqual({ customer_id: 'c1', month: '2026-01', currency: 'EUR' });
    expect(plan.tasks[1]).toMatchObject({ name: 'charge', args: { customer_id: 'c1', currency: 'EUR' }, max_attempts: 10, timeout_ms: 30_000 });
  });

  it('inputs that do not fit: diagnostics and exit 1', async () => {
    const run = await runCliInProcess(['compile', 'order_fulfilment', '--inputs', '{"parcels":[]}']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("must have required property 'order_id' [invalid-inputs]");
    expect(run.stderr).not.toMatch(NO_STACK);
  });

  it('an unknown workflow name: exit 1 with the known names', async () => {
    const run = await runCliInProcess(['compile', 'order_fulfillment']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('no workflow named "order_fulfillment" in definitions; did you mean "order_fulfilment"?\n');
    // a misspelled file of the definitions: the file meant
    const file = await runCliInProcess(['compile', 'definitions/order_fulfillment.yaml']);
    expect([file.code, file.stderr]).toEqual([2, 'braid: no such file: definitions/order_fulfillment.yaml; did you mean definitions/order_fulfilment.yaml?\n']);
  });

  it('an invalid definition: its diagnostics and exit 1', async () => {
    const run = await runCliInProcess(['compile', 'test/fixtures/invalid/unknown_dep_hint.yaml']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('[unknown-dep]');
  });
});

describe('braid graph', () => {
  it('mermaid by default, dot on request', async () => {
    const mermaid = await runCliInProcess(['graph', 'order_fulfilment']);
    expect(mermaid.code).toBe(0);
    expect(mermaid.stdout).toMatch(/^flowchart TD\n/);
    expect(mermaid.stdout).toContain('  decide_shipment --> ship\n');
    const dot = await runCliInProcess(['graph', 'definitions/research_brief.yaml', '--format', 'dot']);
    expect(dot.code).toBe(0);
    expect(dot.stdout).toMatch(/^digraph "research_brief" \{/);
    expect(dot.stdout).toContain('"plan_topics" -> "research";');
  });
});

describe('the README', () => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');

  it('gives the two set-up commands first', () => {
    const commands = [...readme.matchAll(/^```sh\n([\s\S]*?)```/gm)].map((m) => m[1].trim());
    expect(commands[0]).toBe('npm ci && npx braid demo');
    expect(commands[1]).toBe('npm test');
  });

  it('main command: in an empty temporary folder, on the embedded database, runs the examples to the end; a second run works too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'braid-readme-'));
    const env = { DATABASE_URL: '' };
    // as the README says it: a process of its own
    const first = runCli(['demo'], { cwd: dir, env, timeoutMs: 180_000 });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('7 valid, 0 error(s); 7 new version(s) registered');
    expect(first.stdout).toMatch(
      /monthly_billing \w+: completed\n {2}output: \{"invoice":\{.*"receipt_url":"https:\/\/files\.example\.com\/receipts\/cus_42\.pdf"\}/,
    );
    expect(first.stdout).toMatch(/research_topic \w+: completed\n {2}output: \{"topic":"battery recycling"/);
    // waits: the fraud gate passes on the score, the manual review and the two approvals are emitted by the demo
    expect(first.stdout).toMatch(/signal manual_review \{"approved":true,"reviewer":"dana"\} -> \w+ \(resolves decide_shipment\)/);
    expect(first.stdout).toMatch(/order_fulfilment \w+: completed\n {2}output: \{"order_id":"ord_1001","tracking":"msg_\w+_notify"\}/);
    expect(first.stdout).toMatch(
      /expense_approval \w+: completed\n {2}output: \{"decision":\{"decision":"approved","expense_id":"exp_7"\},"expense_id":"exp_7"\}/,
    );
    // child workflows and cross-workflow waits: the research brief starts a group and waits on a quorum of it
    expect(first.stdout).toMatch(/research_brief \w+: completed\n {2}output: \{"brief":\{"brief_id":42,"sections":3\},"brief_id":42\}/);
    expect(first.stdout).toMatch(/editorial_review \w+: completed\n {2}output: \{"url":"https:\/\/news\.example\.com\/packets\/1"\}/);
    // a branch and its join: the verified user gets the trial, the reminder is skipped
    expect(first.stdout).toMatch(/signal email_verified \{"user_id":"u_42"\} -> \w+ \(resolves check_verified\)/);
    expect(first.stdout).toMatch(/user_onboarding \w+: completed \(skipped: send_reminder\)\n {2}output: \{"trial":true,"user_id":"u_42","reminded":false\}/);
    expect(first.stdout).not.toContain('skip ');
    expect(first.stdout).toContain('7 of 7 workflow(s) completed.');
    expect(first.stdout).toMatch(/(\d+) of \1 workflow\(s\) completed\./);
    const second = runCli(['demo'], { cwd: dir, env, timeoutMs: 180_000 });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('0 new version(s) registered');
    // each run has its own 180 s deadline: the test's must cover both, not vitest's default 30 s
  }, 400_000);
});
