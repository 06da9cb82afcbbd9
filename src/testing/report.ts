/**
 * `braid test` results in each output format: text (a diff per failed expectation, with the step and the
 * virtual time), json, junit (for CI test reports) and github (annotations at the failing expectation).
 */
import type { Coverage } from './coverage.js';
import type { Failure, TestResult } from './run-test.js';

export const TEST_FORMATS = ['text', 'json', 'junit', 'github'] as const;
export type TestFormat = (typeof TEST_FORMATS)[number];

export interface TestReport {
  results: TestResult[];
  /** Test files that could not run (their diagnostics are reported beside). */
  files: number;
  ms: number;
  coverage?: Coverage[];
}

export function counts(results: readonly TestResult[]): { passed: number; failed: number } {
  const passed = results.filter((r) => r.passed).length;
  return { passed, failed: results.length - passed };
}

const json = (v: unknown) => JSON.stringify(v);

function where(f: Failure): string {
  if (f.step === 'final') return `the final expect, at ${f.time}`;
  if (f.step === 'run') return `the run, at ${f.time}`;
  return `step ${f.step + 1} (expect), at ${f.time}`;
}

/** One failure as lines: where, then each mismatch as expected/actual. */
export function describeFailure(r: TestResult, f: Failure): string[] {
  const lines = [`${r.file}:${f.line}: ${where(f)}`];
  if (f.message) lines.push(`  ${f.message}`);
  for (const m of f.mismatches) {
    const simple = (v: unknown) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null;
    if (simple(m.expected) && simple(m.actual)) lines.push(`  ${m.path}: expected ${json(m.expected)}, got ${json(m.actual)}`);
    else lines.push(`  ${m.path}:`, `    - expected ${json(m.expected)}`, `    + actual   ${json(m.actual)}`);
  }
  for (const t of f.failed ?? []) {
    const when = t.attempts === 0 ? 'before it ran' : `after ${t.attempts} attempt${t.attempts === 1 ? '' : 's'}`;
    lines.push(`  task "${t.task}" ${t.state} ${when}${t.error ? `: ${t.error.split('\n')[0]}` : ''}`);
  }
  return lines;
}

export function formatText(report: TestReport): string {
  const out: string[] = [];
  for (const r of report.results) {
    out.push(`${r.passed ? 'PASS' : 'FAIL'}  ${r.file} › ${r.name} (${r.ms} ms)`);
    for (const f of r.failures) out.push(...describeFailure(r, f).map((l) => `      ${l}`));
  }
  if (report.coverage) out.push('', ...formatCoverage(report.coverage));
  const { passed, failed } = counts(report.results);
  out.push('', `${passed} passed, ${failed} failed (${report.results.length} test(s) in ${report.files} file(s), ${(report.ms / 1000).toFixed(1)} s)`);
  return `${out.join('\n')}\n`;
}

export function formatCoverage(coverage: readonly Coverage[]): string[] {
  const out = ['coverage:'];
  for (const c of coverage) {
    out.push(`  ${c.workflow} (${c.tests} test(s))`);
    out.push(`    tasks run: ${c.ran.length} of ${c.tasks.length}${c.neverRan.length ? `; never run: ${c.neverRan.join(', ')}` : ''}`);
    if (c.skipped.length) out.push(`    skipped in some test: ${c.skipped.join(', ')}`);
    for (const w of c.waits) out.push(`    wait ${w.task}: ${w.terms.map((t) => `${t.name} ${t.everTrue ? 'true in some test' : 'never true'}`).join(', ')}`);
  }
  return out;
}

export function formatJson(report: TestReport): string {
  return `${JSON.stringify(
    {
      ...counts(report.results),
      files: report.files,
      ms: report.ms,
      tests: report.results.map((r) => ({ file: r.file, workflow: r.workflow, name: r.name, line: r.line, passed: r.passed, ms: r.ms, failures: r.failures })),
      ...(report.coverage ? { coverage: report.coverage } : {}),
    },
    null,
    2,
  )}\n`;
}

const xml = (s: string) =>
  s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');

export function formatJunit(report: TestReport): string {
  const byFile = new Map<string, TestResult[]>();
  for (const r of report.results) byFile.set(r.file, [...(byFile.get(r.file) ?? []), r]);
  const { failed } = counts(report.results);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="braid test" tests="${report.results.length}" failures="${failed}" time="${(report.ms / 1000).toFixed(3)}">`,
  ];
  for (const [file, results] of byFile) {
    const ms = results.reduce((n, r) => n + r.ms, 0);
    out.push(`  <testsuite name="${xml(file)}" tests="${results.length}" failures="${counts(results).failed}" time="${(ms / 1000).toFixed(3)}">`);
    for (const r of results) {
      const attrs = `classname="${xml(r.workflow)}" name="${xml(r.name)}" file="${xml(r.file)}" line="${r.line}" time="${(r.ms / 1000).toFixed(3)}"`;
      if (r.passed) {
        out.push(`    <testcase ${attrs}/>`);
        continue;
      }
      const detail = r.failures.flatMap((f) => describeFailure(r, f)).join('\n');
      const first = r.failures[0];
      const message = first.message ?? first.mismatches.map((m) => m.path).join(', ');
      out.push(`    <testcase ${attrs}>`, `      <failure message="${xml(message)}">${xml(detail)}</failure>`, '    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

/** GitHub workflow commands escape newlines and percent signs in messages. */
const ghEscape = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const ghProperty = (s: string) => ghEscape(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

export function formatGithub(report: TestReport): string {
  const out: string[] = [];
  for (const r of report.results) {
    for (const f of r.failures) {
      const [, ...body] = describeFailure(r, f);
      out.push(
        `::error file=${ghProperty(r.file)},line=${f.line},title=${ghProperty(`braid test: ${r.name}`)}::` +
          `${ghEscape([where(f), ...body.map((l) => l.trim())].join('\n'))}`,
      );
    }
  }
  const { passed, failed } = counts(report.results);
  out.push(`${passed} passed, ${failed} failed`);
  return `${out.join('\n')}\n`;
}

export function formatReport(report: TestReport, format: TestFormat): string {
  switch (format) {
    case 'text':
      return formatText(report);
    case 'json':
      return formatJson(report);
    case 'junit':
      return formatJunit(report);
    case 'github':
      return formatGithub(report);
  }
}
