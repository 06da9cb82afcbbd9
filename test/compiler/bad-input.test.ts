import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../src/index.js';
import { runCli } from '../helpers/cli.js';
import { patient } from '../helpers/patience.js';

const dir = mkdtempSync(join(tmpdir(), 'braid-bad-'));

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function validateOne(path: string) {
  const run = runCli(['validate', '--format', 'json', path], { cwd: dir });
  const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
  return { ...run, diagnostics: report.diagnostics };
}

function aliasBomb(): string {
  const lines = ['name: bomb', 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 9; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  lines.push('tasks: { t: { kind: x, args: { boom: *a8 } } }');
  return `${lines.join('\n')}\n`;
}

const cases: [string, () => string, string][] = [
  ['an empty file', () => file('empty.yaml', ''), 'schema'],
  ['binary garbage', () => file('garbage.yaml', Buffer.concat([Buffer.from([0x00, 0xff, 0xfe]), randomBytes(4096)])), 'yaml-syntax'],
  ['non-UTF-8 text (Latin-1)', () => file('latin1.yaml', Buffer.from('name: caf\xe9\ntasks: {}\n', 'latin1')), 'yaml-syntax'],
  [
    'a 50 MB file',
    () => file('huge.yaml', `name: huge\ntasks:\n${'  # padding padding padding padding padding padding padding padding\n'.repeat((50 * 1024 * 1024) / 68)}`),
    'input-limit',
  ],
  [
    '10,000-deep flow nesting',
    () => file('deep_flow.yaml', `name: deep\ntasks: { t: { kind: x, args: { a: ${'['.repeat(10_000)}${']'.repeat(10_000)} } } }\n`),
    'input-limit',
  ],
  ['10,000-deep block sequences', () => file('deep_block.yaml', `name: deep\nx:\n${'- '.repeat(10_000)}leaf\n`), 'input-limit'],
  ['10,000-deep JSON objects', () => file('deep.json', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`), 'input-limit'],
  ['a YAML alias bomb', () => file('bomb.yaml', aliasBomb()), 'yaml-alias-limit'],
  ['a malformed JSON definition', () => file('broken.json', '{"name": "broken", "tasks": {"a": {"kind": "x"}'), 'yaml-syntax'],
  ['a definition that is a list', () => file('list.yaml', '- name: x\n- tasks: {}\n'), 'schema'],
  ['a definition that is a scalar', () => file('scalar.yaml', 'just some words\n'), 'schema'],
  ['wrong types everywhere', () => file('types.yaml', 'name: 3\ntasks: 5\ndefaults: []\noutput: { a: 1 }\n'), 'schema'],
];

describe('bad input never crashes: one diagnostic, exit 1, within seconds', () => {
  it.each(cases)('%s', (_, make, rule) => {
    const run = validateOne(make());
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('');
    expect(run.diagnostics.length).toBeGreaterThan(0);
    expect(run.diagnostics.map((d) => d.rule)).toContain(rule);
    expect(run.ms).toBeLessThan(patient(15_000));
  });

  it('the text format never prints a stack trace, even for garbage', () => {
    const run = runCli(['validate', file('garbage2.yaml', randomBytes(2048))], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
  });

  it('a well-formed .json definition is accepted like YAML', () => {
    const path = file('greeter.json', JSON.stringify({ name: 'greeter', tasks: { hello: { kind: 'say', args: { text: 'hi' } } } }, null, 2));
    const run = validateOne(path);
    expect(run.diagnostics).toEqual([]);
    expect(run.code).toBe(0);
    const compiled = runCli(['compile', path, '--id', 'g1', '--now', '2026-01-01T00:00:00Z'], { cwd: dir });
    expect(compiled.code).toBe(0);
    expect(JSON.parse(compiled.stdout).tasks[0]).toMatchObject({ name: 'hello', kind: 'say', args: { text: 'hi' } });
  });

  it('limits are configurable', () => {
    const path = file('nest.yaml', 'name: nest\ntasks: { t: { kind: x, args: { a: [[[[[[1]]]]]] } } }\n');
    expect(validateOne(path).code).toBe(0);
    const strict = runCli(['validate', '--max-depth', '3', path], { cwd: dir });
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain('[input-limit]');
    expect(runCli(['validate', '--max-bytes', '10', path], { cwd: dir }).stdout).toContain('[input-limit]');
  });
});
