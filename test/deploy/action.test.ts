import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { braidBin, repoRoot } from '../helpers/cli.js';
import { project, write } from '../helpers/project.js';

const V1 = 'name: refund\ntasks:\n  settle: { kind: settle_refund }\n';
const V2 = 'name: refund\ntasks:\n  settle: { kind: settle_payment }\n';
const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

describe('the GitHub Action with plan: true', () => {
  it('compares a pull request with its base branch (fetched when the checkout is shallow) and annotates what blocks the deploy', () => {
    const action = parse(readFileSync(join(repoRoot, 'action.yml'), 'utf8')) as {
      inputs: Record<string, { default: string }>;
      runs: { steps: { name: string; if?: string; run: string }[] };
    };
    expect(action.inputs.plan.default).toBe('false');
    const step = action.runs.steps.find((s) => s.name === 'braid plan')!;
    expect(step.if).toBe("inputs.plan == 'true'");
    // the base branch, and a pull request's clone of it that changes a kind
    const origin = project({
      'braid.config.yaml': 'definitions: definitions\nhandlers: handlers.mjs\n',
      'definitions/refund.yaml': V1,
      'handlers.mjs': 'export default { settle_payment: async () => ({}) };\n',
    });
    const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv });
    git(origin, 'init', '-q', '-b', 'main');
    git(origin, 'add', '.');
    git(origin, 'commit', '-qm', 'v1');
    const clone = join(mkdtempSync(join(tmpdir(), 'braid-pr-')), 'repo');
    execFileSync('git', ['clone', '-q', `file://${origin}`, clone], { env: gitEnv });
    write(clone, 'definitions/refund.yaml', V2);
    git(clone, 'update-ref', '-d', 'refs/remotes/origin/main');
    // `npx --no-install braid` is the project's braid: here, this repository's
    const bin = mkdtempSync(join(tmpdir(), 'braid-npx-'));
    writeFileSync(join(bin, 'npx'), `#!/bin/sh\nshift 2\nexec "${process.execPath}" "${braidBin}" "$@"\n`);
    chmodSync(join(bin, 'npx'), 0o755);
    const run = spawnSync('bash', ['-e', '-c', step.run], {
      cwd: clone,
      env: { ...gitEnv, PATH: `${bin}:${process.env.PATH}`, BRAID_PATHS: '', BRAID_AGAINST: '', GITHUB_BASE_REF: 'main', DATABASE_URL: '' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(
      new RegExp(
        '^::error file=definitions/refund\\.yaml,line=3,col=19,endLine=3,endColumn=33,title=braid deploy-missing-handler::' +
          'kind "settle_refund" has no handler in handlers\\.mjs: workflows started on [0-9a-f]{12} may still run and need it',
        'm',
      ),
    );
    expect(git(clone, 'rev-parse', '--verify', 'refs/remotes/origin/main').toString().trim()).toMatch(/^[0-9a-f]{40}$/);
    // an explicit ref, and the handler kept: nothing blocks
    write(clone, 'handlers.mjs', 'export default { settle_payment: async () => ({}), settle_refund: async () => ({}) };\n');
    const ok = spawnSync('bash', ['-e', '-c', step.run], {
      cwd: clone,
      env: { ...gitEnv, PATH: `${bin}:${process.env.PATH}`, BRAID_PATHS: '', BRAID_AGAINST: 'origin/main', DATABASE_URL: '' },
      encoding: 'utf8',
    });
    expect(ok).toMatchObject({ status: 0, stdout: '' });
  }, 60_000);
});
