import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../src/index.js';
import { compile, validate } from '../../src/index.js';
import { runCli } from '../helpers/cli.js';
import { patient } from '../helpers/patience.js';

const GOOD = 'name: good\ntasks:\n  t: { kind: k }\n';

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'braid-files-'));
}

function json(args: string[], cwd: string) {
  const run = runCli(['validate', '--format', 'json', ...args], { cwd, timeoutMs: 20_000 });
  return { ...run, report: JSON.parse(run.stdout) as { diagnostics: Diagnostic[]; files: number; errors: number } };
}

describe('files that are not what they seem: a per-file diagnostic, bounded reads, the rest of the run goes on', () => {
  it('/dev/zero is refused without reading it, at 1:1 (valid SARIF)', () => {
    const run = json(['/dev/zero'], folder());
    expect(run.code).toBe(1);
    expect(run.ms).toBeLessThan(patient(10_000));
    expect(run.report.diagnostics).toEqual([
      expect.objectContaining({ rule: 'input-limit', line: 1, column: 1, message: 'not a regular file (a character device): only files are read' }),
    ]);
    const sarif = JSON.parse(runCli(['validate', '--format', 'sarif', '/dev/zero']).stdout);
    expect(sarif.runs[0].results[0].locations[0].physicalLocation.region).toMatchObject({ startLine: 1, startColumn: 1 });
  });

  it('a FIFO in a folder is a diagnostic, never a hang; the good file beside it is checked', () => {
    const dir = folder();
    execFileSync('mkfifo', [join(dir, 'pipe.yaml')]);
    writeFileSync(join(dir, 'good.yaml'), GOOD);
    const run = json(['.'], dir);
    expect(run.code).toBe(1);
    expect(run.report.files).toBe(2);
    expect(run.report.diagnostics.map((d) => [d.file, d.message])).toEqual([['pipe.yaml', 'not a regular file (a FIFO): only files are read']]);
  });

  it('an oversized file is refused at its size, without reading it whole; its diagnostic is at 1:1', () => {
    const dir = folder();
    writeFileSync(join(dir, 'big.yaml'), Buffer.alloc(64 * 1024, 0x20));
    const run = json(['--max-bytes', '1000', 'big.yaml'], dir);
    expect(run.report.diagnostics).toEqual([
      expect.objectContaining({
        rule: 'input-limit',
        line: 1,
        column: 1,
        end_line: 1,
        end_column: 1,
        message: 'file is 65536 bytes, over the 1000 bytes limit',
      }),
    ]);
  });

  it('unreadable files (a link loop, a broken link) are per-file diagnostics; the run goes on', () => {
    const dir = folder();
    symlinkSync('b.yaml', join(dir, 'a.yaml'));
    symlinkSync('a.yaml', join(dir, 'b.yaml'));
    symlinkSync('missing.yaml', join(dir, 'broken.yaml'));
    writeFileSync(join(dir, 'good.yaml'), GOOD);
    const run = json(['.'], dir);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('');
    expect(run.report.diagnostics.map((d) => [d.file, d.message])).toEqual([
      ['a.yaml', 'cannot read the file: too many levels of symbolic links'],
      ['b.yaml', 'cannot read the file: too many levels of symbolic links'],
      ['broken.yaml', 'cannot read the file: no such file (a broken link?)'],
    ]);
  });

  it('linked definition files and folders are followed and checked once each; a link back up is no loop', () => {
    const dir = folder();
    const elsewhere = folder();
    writeFileSync(join(elsewhere, 'shared.yaml'), 'name: shared\ntasks:\n  t: { kind: k, deps: [nope] }\n');
    mkdirSync(join(dir, 'defs'));
    symlinkSync(join(elsewhere, 'shared.yaml'), join(dir, 'defs', 'shared.yaml'));
    symlinkSync(elsewhere, join(dir, 'defs', 'more'));
    symlinkSync('..', join(dir, 'defs', 'up'));
    const run = json(['defs'], dir);
    expect(run.report.files).toBe(1);
    expect(run.report.diagnostics.map((d) => `${d.file} ${d.rule}`)).toEqual(['defs/more/shared.yaml unknown-dep']);
    const linkedFile = folder();
    symlinkSync(join(elsewhere, 'shared.yaml'), join(linkedFile, 'shared.yaml'));
    expect(json(['.'], linkedFile).report.diagnostics.map((d) => `${d.file} ${d.rule}`)).toEqual(['shared.yaml unknown-dep']);
  });
});

describe('messages and positions', () => {
  it('control characters from a definition are escaped in messages (no terminal control, no forged lines)', () => {
    const dir = folder();
    writeFileSync(join(dir, 'esc.yaml'), 'name: esc\ntasks:\n  t: { kind: k, deps: ["\\e[2Jx\\nfake.yaml:1:1: error"] }\n');
    const run = runCli(['validate', 'esc.yaml'], { cwd: dir });
    expect(run.stdout).not.toMatch(/\x1b/);
    expect(run.stdout).toContain('task "t" depends on unknown task "\\u001b[2Jx\\nfake.yaml:1:1: error" [unknown-dep]');
    expect(run.stdout.split('\n').filter((l) => l.startsWith('fake.yaml'))).toEqual([]);
  });

  it('a "__proto__" key in args and metadata stays a key, never a prototype', () => {
    const source = 'name: proto\ntasks:\n  t: { kind: k, args: { __proto__: { polluted: 1 }, ok: "${{ 1 + 1 }}" }, metadata: { __proto__: 2 } }\n';
    const result = validate([{ path: 'proto.yaml', content: source }]);
    const plan = compile(result.definitions[0], {}, { id: 'p', now: '2026-01-01T00:00:00Z' });
    const args = plan.tasks[0].args as Record<string, unknown>;
    expect(Object.keys(args)).toEqual(['__proto__', 'ok']);
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(plan.tasks[0]))).toMatchObject({ args: { ['__proto__']: { polluted: 1 }, ok: 2 }, metadata: { ['__proto__']: 2 } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('CEL columns stay exact after \\U escapes of characters outside the BMP', () => {
    const source = 'name: astral\ntasks:\n  t: { kind: k, args: { a: "\\U0001F600\\U0001F600 ${{ 1 + \\"a\\" }}" } }\n';
    const [d] = validate([{ path: 'astral.yaml', content: source }]).diagnostics;
    expect(d).toMatchObject({ rule: 'cel-type', line: 3, column: 54, end_column: 62 });
  });

  it('a name of 70 characters is told the 64-character limit, not the pattern', () => {
    const long = 'a'.repeat(70);
    const diagnostics = validate([{ path: 'x.yaml', content: `name: x\ntasks:\n  ${long}: { kind: k }\n` }]).diagnostics;
    expect(diagnostics.map((d) => d.message)).toEqual([`tasks: invalid name "${long}": longer than 64 characters`]);
  });

  it('the caret of a diagnostic past column 200 points at its column', () => {
    const dir = folder();
    const pad = 'x'.repeat(300);
    writeFileSync(join(dir, 'wide.yaml'), `name: wide\ntasks:\n  t: { kind: k, args: { pad: "${pad}" }, deps: [nope] }\n`);
    const run = runCli(['validate', 'wide.yaml'], { cwd: dir });
    const [headline, source, caret] = run.stdout.split('\n');
    const column = Number(/^wide\.yaml:3:(\d+):/.exec(headline)![1]);
    expect(column).toBeGreaterThan(300);
    const at = caret.indexOf('^');
    expect(source.slice(at, at + 4)).toBe('nope');
    expect(source.length).toBeLessThan(220);
  });
});
