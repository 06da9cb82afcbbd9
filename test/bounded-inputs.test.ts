import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { terminalSafe } from '../src/cli/terminal-safe.js';
import { runCliInProcess } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'braid-bounds-'));

describe('inputs are bounded everywhere: a clear error in bounded time, never a crash', () => {
  it('--inputs, --payload and --source from a device or a file over 10 MB are refused before anything is read whole', async () => {
    const big = join(dir, 'big.json');
    writeFileSync(big, `{"x":"${'a'.repeat(11 * 1024 * 1024)}"}`);
    for (const args of [
      ['start', 'any', '--inputs', '@/dev/zero'],
      ['compile', 'any', '--inputs', '@/dev/zero'],
      ['signal', 'id', 'key', '--payload', '@/dev/zero'],
      ['signal', 'id', 'key', '--payload', '{}', '--source', '@/dev/zero'],
    ]) {
      const r = await runCliInProcess(args, { cwd: dir, env: { DATABASE_URL: '' } });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(
        /^braid: cannot read (inputs|payload|source) file \/dev\/zero: not a regular file \(a character device\): only files are read\n$/,
      );
    }
    const r = await runCliInProcess(['start', 'any', '--inputs', `@${big}`], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(r).toMatchObject({ code: 2, stderr: `braid: inputs file ${big} is over 10 MB\n` });
  });

  it('a definition with more tasks than a plan may have is refused by validate and compile, at once', async () => {
    const n = 120_000;
    let yaml = 'name: big\ntasks:\n';
    for (let i = 0; i < n; i++) yaml += `  t${i}: { kind: k }\n`;
    const file = join(dir, 'big.yaml');
    writeFileSync(file, yaml);
    const started = performance.now();
    const v = await runCliInProcess(['validate', file], { cwd: dir });
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(
      'error: the definition has 120,000 tasks (for_each lists included), over the plan limit of 100,000 (limit plan_tasks): it could never start [for-each]',
    );
    const c = await runCliInProcess(['compile', file], { cwd: dir });
    expect(c.code).toBe(1);
    console.info(`a 120,000-task definition: validate and compile refused it in ${Math.round(performance.now() - started)} ms`);
    // parsing 2.4 MB of YAML twice takes 12 s on a quiet 2-core machine, 35 s on a busy one
  }, 120_000);

  it('control bytes in a definition reach the terminal escaped, in the message and in the snippet', async () => {
    const file = join(dir, 'ctrl.yaml');
    writeFileSync(file, 'name: ctrl\ntasks:\n  t: { kind: k, deps: ["\\e[2Jx"] }\n');
    const r = await runCliInProcess(['validate', file], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain('\u001b');
    expect(r.stdout).toContain('\\u001b[2Jx');
  });

  it('control bytes that come with data (a name, a path) are printed escaped in every line, errors included', async () => {
    const r = await runCliInProcess(['start', 'a\x1b[2Jb\x1b]0;title\x07'], { cwd: dir, env: { DATABASE_URL: '' } });
    expect(r.stderr).toContain('a\\u001b[2Jb\\u001b]0;title\\u0007');
    expect(r.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    const v = await runCliInProcess(['validate', join(dir, 'no\rpe\x1b[8m.yaml')], { cwd: dir });
    expect(v).toMatchObject({ code: 2, stderr: `braid: no such file or folder: ${join(dir, 'no\\rpe\\u001b[8m.yaml')}\n` });
  });

  it('terminal-safe text: only line breaks, tabs and braid’s own colours and progress line survive', () => {
    const own = fc.constantFrom('\x1b[0m', '\x1b[1m', '\x1b[2m', '\x1b[31m', '\x1b[33m', '\x1b[36m', '\r\x1b[K');
    const piece = fc.oneof(fc.string({ unit: 'binary' }), own, fc.constantFrom('\x1b[2J', '\x1b]0;x\x07', '\x1b[8m', '\r', '\x9b', '\u202e'));
    fc.assert(
      fc.property(fc.array(piece), (pieces) => {
        const safe = terminalSafe(pieces.join(''));
        const rest = safe.replace(/\x1b\[(?:0|1|2|31|33|36)m|\r\x1b\[K/g, '');
        expect(rest).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        // nothing printable is lost: text without control bytes is unchanged
        const clean = pieces.join('').replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, '');
        expect(terminalSafe(clean)).toBe(clean);
      }),
    );
  });

  it('a workflow test that runs past --timeout fails, naming where it was; the others still run', async () => {
    const project = mkdtempSync(join(tmpdir(), 'braid-slowtest-'));
    const write = (f: string, text: string) => (mkdirSync(join(project, f, '..'), { recursive: true }), writeFileSync(join(project, f), text));
    write('definitions/slow.yaml', 'name: slow\ntasks:\n  t: { kind: slow }\n  u: { kind: quick, deps: [t] }\n');
    write(
      'definitions/slow.test.yaml',
      'workflow: slow\ntests:\n  - name: waits on a real handler\n    steps:\n      - advance: 1h\n  - name: ' +
        'mocked\n    mocks: { t: { output: {} }, u: { output: {} } }\n    expect: { state: completed }\n',
    );
    // the slow handler never answers, and the timeout leaves the mocked test room on a loaded machine (it took 0.9 s)
    write('handlers.mjs', 'export default { slow: () => new Promise(() => {}), quick: async () => ({}) };\n');
    const r = await runCliInProcess(['test', '--handlers', 'handlers.mjs', '--timeout', '4s'], { cwd: project, env: { DATABASE_URL: '' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('the test ran past its timeout of 4 s (--timeout) at its start');
    expect(r.stdout).toMatch(/1 passed, 1 failed/);
    expect(await runCliInProcess(['test', '--timeout', 'soon'], { cwd: project, env: { DATABASE_URL: '' } })).toMatchObject({
      code: 2,
      stderr: 'braid: --timeout must be a duration such as 30s or 5m, not "soon"\n',
    });
  }, 60_000);
});
