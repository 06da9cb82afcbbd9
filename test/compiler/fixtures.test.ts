import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CompileError, compile, type Diagnostic, RULES, validate } from '../../src/index.js';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';

const invalidDir = join(repoRoot, 'test/fixtures/invalid');
const compileDir = join(repoRoot, 'test/fixtures/compile');
const configDir = join(repoRoot, 'test/fixtures/config');
// the `braid test` fixture project: its bad/ folder holds a test file per test-file rule
const testFileDir = join(repoRoot, 'test/fixtures/testing');
const testFiles = readdirSync(join(testFileDir, 'bad')).map((f) => join(testFileDir, 'bad', f));
// the deploy rules' fixtures (test/deploy/fixtures.test.ts): the versions to deploy carry the expectations
const deployFiles = readdirSync(join(repoRoot, 'test/fixtures/deploy')).map((c) => join(repoRoot, 'test/fixtures/deploy', c, 'after.yaml'));

/** `# expect: RULE LINE:COL` lines at the top of a file (or in FILE.expect for JSON, which has no comments). */
function expectations(file: string): string[] {
  const sidecar = `${file}.expect`;
  if (file.endsWith('.json')) return readFileSync(sidecar, 'utf8').split('\n').filter(Boolean);
  return [...readFileSync(file, 'utf8').matchAll(/^# expect: (.+)$/gm)].map((m) => m[1].trim());
}

function definitionFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((e) => {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) return definitionFiles(p);
      return /\.(ya?ml|json)$/.test(e) ? [p] : [];
    });
}

const describeDiagnostic = (d: Diagnostic) => `${d.rule} ${d.line}:${d.column}`;

describe('invalid fixtures, through the CLI (--format json)', async () => {
  const files = definitionFiles(invalidDir);
  const run = await runCliInProcess(['validate', '--format', 'json', 'test/fixtures/invalid']);
  const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[]; files: number; errors: number; warnings: number };

  it('has at least 60 fixtures and reports them all in one run, exit 1', () => {
    expect(files.length).toBeGreaterThanOrEqual(60);
    expect(report.files).toBe(files.length);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('');
  });

  it.each(files.map((f) => [relative(invalidDir, f), f]))('%s yields its rule at its position', (_, file) => {
    const wanted = relative(repoRoot, file);
    const actual = report.diagnostics.filter((d) => d.file === wanted).map(describeDiagnostic);
    expect(actual).toEqual(expectations(file));
  });

  it('every diagnostic has the full contract', () => {
    for (const d of report.diagnostics) {
      expect(Object.keys(d).sort()).toEqual(
        ['column', 'end_column', 'end_line', 'file', 'line', 'message', 'path', 'rule', 'severity', ...(d.hint ? ['hint'] : [])].sort(),
      );
      expect(RULES).toContain(d.rule);
      expect(d.end_line > d.line || (d.end_line === d.line && d.end_column >= d.column)).toBe(true);
      expect(d.path === '' || d.path.startsWith('/')).toBe(true);
    }
  });
});

describe('compile-time fixtures (inputs that do not fit)', () => {
  const files = definitionFiles(compileDir);
  it.each(files.map((f) => [relative(compileDir, f), f]))('%s', (_, file) => {
    const text = readFileSync(file, 'utf8');
    const inputs = JSON.parse(/^# inputs: (.*)$/m.exec(text)![1]) as unknown;
    const result = validate([{ path: relative(repoRoot, file), content: text }]);
    expect(result.errors).toBe(0);
    let diagnostics: Diagnostic[] = [];
    try {
      compile(result.definitions[0], inputs, { id: 'wf', now: '2026-01-01T00:00:00Z' });
    } catch (error) {
      expect(error).toBeInstanceOf(CompileError);
      diagnostics = (error as CompileError).diagnostics;
    }
    expect(diagnostics.map((d) => d.rule)).toEqual(expectations(file).map((e) => e.split(' ')[0]));
  });
});

describe("config fixtures: any command in the folder reports the config's problems, with positions", () => {
  const files = definitionFiles(configDir);
  it.each(files.map((f) => [relative(configDir, f), f]))('%s', async (_, file) => {
    const run = await runCliInProcess(['validate'], { cwd: dirname(file) });
    expect(run.code).toBe(1);
    const found = [...run.stderr.matchAll(/^braid\.config\.yaml:(\d+):(\d+): error: .* \[(\S+)\]$/gm)].map((m) => `${m[3]} ${m[1]}:${m[2]}`);
    expect(found).toEqual(expectations(file));
  });
});

describe('test-file fixtures: braid validate checks workflow test files against the definitions', async () => {
  const run = await runCliInProcess(['validate', '--format', 'json', 'bad'], { cwd: testFileDir });
  const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[] };
  it.each(testFiles.map((f) => [relative(testFileDir, f), f]))('%s yields its rule at its position', (name, file) => {
    expect(report.diagnostics.filter((d) => d.file === name).map(describeDiagnostic)).toEqual(expectations(file));
  });
});

describe('rule coverage', () => {
  it('every rule name in SPEC is exercised by a fixture', () => {
    const seen = new Set(
      [...definitionFiles(invalidDir), ...definitionFiles(compileDir), ...definitionFiles(configDir), ...testFiles, ...deployFiles].flatMap((f) =>
        expectations(f).map((e) => e.split(' ')[0]),
      ),
    );
    expect(RULES.filter((r) => !seen.has(r))).toEqual([]);
  });
});
