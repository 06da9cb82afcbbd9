import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { validate } from '../../src/compiler/validate.js';
import { planDeploy } from '../../src/deploy/plan.js';
import { repoRoot } from '../helpers/cli.js';

/**
 * Deploy fixtures: a folder per case with before.yaml (the version running) and after.yaml (the version to
 * deploy), whose `# expect: RULE LINE:COL` lines are the findings and `# handlers: a, b` the kinds the
 * handlers module has. The running version's needs are unknown (as with a git ref): every kind and key it uses,
 * unless before.yaml says what its running workflows started (`# started: JSON`, as braid reads it from Postgres).
 */
// biome-ignore lint/suspicious/noExportsInTest: the deploy tests share this file's fixture folder
export const deployDir = join(repoRoot, 'test/fixtures/deploy');

describe('deploy fixtures: each deploy rule at its position', () => {
  const cases = readdirSync(deployDir).sort();
  it.each(cases)('%s', (name) => {
    const read = (f: string) => ({ path: relative(repoRoot, join(deployDir, name, f)), content: readFileSync(join(deployDir, name, f), 'utf8') });
    const before = validate([read('before.yaml')]).definitions[0];
    const after = read('after.yaml');
    const handlers = /^# handlers: (.*)$/m
      .exec(after.content)?.[1]
      .split(',')
      .map((k) => k.trim());
    const started = /^# started: (.*)$/m.exec(read('before.yaml').content)?.[1];
    const shapes = started === undefined ? undefined : (JSON.parse(started) as { n: number }[]);
    const running = shapes ? shapes.reduce((n, s) => n + s.n, 0) : null;
    const plan = planDeploy({
      validation: validate([after]),
      baseline: [
        { name: before.name, hash: before.hash, current: true, running, normalized: before.normalized, ...(shapes ? { started: shapes as never } : {}) },
      ],
      handlers: handlers ? { file: 'handlers.ts', kinds: new Set(handlers) } : undefined,
      against: { kind: 'git', ref: 'main' },
      includeAbsent: false,
    });
    const found = plan.diagnostics.filter((d) => d.rule !== 'file-name').map((d) => `${d.rule} ${d.line}:${d.column}`);
    expect(found).toEqual([...after.content.matchAll(/^# expect: (.+)$/gm)].map((m) => m[1].trim()));
  });
});
